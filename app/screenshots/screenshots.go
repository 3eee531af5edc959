// Package screenshots pairs a session's screenshots, base and change
// (decision 0083): the images a verify command's screenshots: globs
// collected, by (command, path), from the session's attempt and from the
// baseline attempt that ran the same verify on the pinned commit. The
// session page shows the pairs; the PR body links to them.
package screenshots

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// Store is what pairing reads.
type Store interface {
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	Artifacts(ctx context.Context, attemptID string) ([]store.Artifact, error)
}

// Shot is one side's image: the stored artifact's name, type and digest.
type Shot struct {
	AttemptID   string
	Name        string
	ContentType string
	SHA256      string
	Size        int64
}

// Pair is one screenshot on both sides; a side that has none is nil.
type Pair struct {
	Command, Name string
	// Anchor is the pair's id on the session page (Anchor).
	Anchor       string
	Base, Change *Shot
	// BaseRan says a baseline attempt of the same repository is named:
	// a missing base side is then one the base did not write.
	BaseRan bool
}

// Anchor is the session page's id of the pair (command, name): the same
// on the page and in the PR body's link, and never the untrusted text
// itself.
func Anchor(command, name string) string {
	sum := sha256.Sum256([]byte(command + "\x00" + name))
	return "screenshot-" + hex.EncodeToString(sum[:6])
}

// BaseAttemptID is the baseline attempt that ran verify on the pinned
// commit for the evidence's attempt, "" when there is none (decision
// 0080 fills it).
func BaseAttemptID(ev *contract.Evidence) string {
	if ev == nil || ev.Baseline == nil {
		return ""
	}
	return ev.Baseline.AttemptID
}

// evidenceOf is an attempt's uploaded evidence, nil when it has none yet.
func evidenceOf(a store.Attempt) *contract.Evidence {
	var up contract.ResultUpload
	if a.Result == "" || json.Unmarshal([]byte(a.Result), &up) != nil {
		return nil
	}
	return &up.Evidence
}

// shots are the attempt's screenshots by (command, name): the ones its
// evidence marks with a command that the store holds as an image (its
// own sniffing, never the supervisor's word).
func shots(ctx context.Context, st Store, a store.Attempt, ev *contract.Evidence) (map[[2]string]*Shot, error) {
	if ev == nil {
		return nil, nil
	}
	marked := map[string]string{}
	for _, x := range ev.Artifacts {
		if x.Screenshot != "" && x.Refused == "" {
			marked[x.Name] = x.Screenshot
		}
	}
	if len(marked) == 0 {
		return nil, nil
	}
	stored, err := st.Artifacts(ctx, a.ID)
	if err != nil {
		return nil, err
	}
	out := map[[2]string]*Shot{}
	for _, s := range stored {
		cmd, ok := marked[s.Name]
		if !ok || !contract.IsScreenshotImage(s.ContentType) {
			continue
		}
		out[[2]string{cmd, s.Name}] = &Shot{AttemptID: a.ID, Name: s.Name, ContentType: s.ContentType, SHA256: s.SHA256, Size: s.Size}
	}
	return out, nil
}

// Base is the baseline attempt of the session attempt a, when its
// evidence names one of the session's repository, repoID; ok is false
// otherwise. The repository is the caller's, from the session: a session
// attempt's own RepoID is zero (only snapshot and baseline attempts,
// which have no session, record one).
func Base(ctx context.Context, st Store, a store.Attempt, repoID int64) (base store.Attempt, ok bool, err error) {
	id := BaseAttemptID(evidenceOf(a))
	if id == "" {
		return store.Attempt{}, false, nil
	}
	base, err = st.GetAttempt(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Attempt{}, false, nil
	}
	if err != nil {
		return store.Attempt{}, false, err
	}
	// Never another repository's attempt, whatever the evidence says.
	return base, repoID != 0 && base.RepoID == repoID, nil
}

// Pairs are the session attempt a's screenshots paired with its baseline
// attempt's (Base, of the session's repository repoID), by command and
// then path; none when neither side has any.
func Pairs(ctx context.Context, st Store, a store.Attempt, repoID int64) ([]Pair, error) {
	change, err := shots(ctx, st, a, evidenceOf(a))
	if err != nil {
		return nil, err
	}
	var base map[[2]string]*Shot
	b, baseRan, err := Base(ctx, st, a, repoID)
	if err != nil {
		return nil, err
	}
	if baseRan {
		if base, err = shots(ctx, st, b, evidenceOf(b)); err != nil {
			return nil, err
		}
	}
	keys := map[[2]string]bool{}
	for k := range change {
		keys[k] = true
	}
	for k := range base {
		keys[k] = true
	}
	out := make([]Pair, 0, len(keys))
	for k := range keys {
		out = append(out, Pair{Command: k[0], Name: k[1], Anchor: Anchor(k[0], k[1]), Base: base[k], Change: change[k], BaseRan: baseRan})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Command != out[j].Command {
			return out[i].Command < out[j].Command
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Extension is the file extension a content-addressed image URL ends with
// for a content type ("" for one that is not a screenshot's).
func Extension(contentType string) string {
	switch contentType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	}
	return ""
}
