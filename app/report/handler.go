// Package report is the report_session work's handler: an attempt's
// result becomes the session's end, through a validated commit, a push,
// a pull request and the final sync (docs/ARCHITECTURE.md, step 5). Its
// decisions are decide's (decide.go), over the narrow steps interface;
// githubSteps (github.go) does them against GitHub and the store. The
// engine (package app) wires a Handler with what it needs and nothing
// more (decision 0049).
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/baselines"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// Handler runs report_session work. Its fields are all it reaches of the
// engine.
type Handler struct {
	// Store reads what the attempt left.
	Store Store
	// Transitions records what a write made and ends the session
	// (app/transition's Writer).
	Transitions Transitions
	// Installation is the installation's GitHub client.
	Installation func(ctx context.Context, installationID int64) (*github.Client, error)
	// RevokeTokens revokes the attempt's read tokens (its run is over).
	RevokeTokens func(ctx context.Context, attemptID string)
	// RepoConfig is the config the session runs under; a
	// *config.RepoConfigError when the file does not parse.
	RepoConfig func(ctx context.Context, c *github.Client, sess store.Session) (config.Repo, error)
	// EnsureCheckRun finds or creates the session's check run on
	// sess.HeadSHA (searching first when replay is set).
	EnsureCheckRun func(ctx context.Context, c *github.Client, sess store.Session, replay bool) (int64, error)
	// RequesterPRs opens pull requests as the requester when they signed
	// in to the dashboard (decision 0039); false: as the App.
	RequesterPRs func(ctx context.Context, sess store.Session) (ghwrite.PullRequestOpener, bool)
	// SessionURL is the session's page, nil without web.public_url.
	SessionURL func(id string) *string
	// BotLogin is the App's bot's login, which tells a follow-up on
	// Inspect's own pull request.
	BotLogin func() string
	// CheckRunName is the name of Inspect's check run.
	CheckRunName string
	// Cost prices a session's tokens of a model (config.Server.ModelCost)
	// for the PR body and the check run; nil prices nothing.
	Cost func(model string, u contract.TokenUsage) (float64, bool)
	// Attest signs and keeps the provenance of an attempt whose change
	// is committed (sess.CommitSHA; decision 0078); nil attests nothing.
	Attest func(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) error
	// Provenance is the attempt's provenance link and the keys' URL for
	// the check run ("", "" when it has none); nil links nothing.
	Provenance func(ctx context.Context, sess store.Session) (url, keysURL string)
	// Baselines is sessions.baseline: the evidence compares the change's
	// tests with the base's (decision 0080), and a report waits for the
	// base's verify while it may still come.
	Baselines bool
	// Postpone is the engine's: the report waits its turn, uncounted.
	Postpone func(after time.Duration, why string) error
	// PollInterval is workers.poll_interval: a waiting report looks again
	// after a few of them (sooner when the base's verify reports).
	PollInterval time.Duration
	Now          func() time.Time
	// StopAttempt ends an attempt and its run: a base's verify the report
	// stopped waiting for (nil: the lost-baseline sweep ends it later).
	StopAttempt func(ctx context.Context, attemptID string)
	// Screenshots are the session's screenshot pairs for the PR body
	// (decision 0083); nil lists none.
	Screenshots func(ctx context.Context, sess store.Session) []render.ScreenshotLink
}

// extras are the PR body's and the check run's Extras: the session's cost
// at the server's prices and its page.
func (h *Handler) extras(ctx context.Context, sess store.Session, spec contract.Spec, ev contract.Evidence) render.Extras {
	url := ""
	if h.SessionURL != nil {
		if u := h.SessionURL(sess.ID); u != nil {
			url = *u
		}
	}
	x := render.ExtrasOf(h.Cost, spec.Agent.Model, ev.Usage, url)
	if h.Provenance != nil {
		x.ProvenanceURL, x.KeysURL = h.Provenance(ctx, sess)
	}
	if h.Screenshots != nil {
		x.Screenshots = h.Screenshots(ctx, sess)
	}
	return x
}

// Store is what the handler reads of the store.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	SessionUsage(ctx context.Context, attemptID string) (store.Usage, error)
	Artifacts(ctx context.Context, attemptID string) ([]store.Artifact, error)
	// ConversationTurns are the session's conversation (decisions 0071,
	// 0072): whose turns the commit credits and the PR lists.
	ConversationTurns(ctx context.Context, sess store.Session) ([]session.Turn, error)
	// GetBaseline, FailBaseline and SetAttemptResult are the baseline's
	// (decision 0080): the base's verify the attempt compares with, a lost
	// one failed, and the evidence kept with its comparison.
	GetBaseline(ctx context.Context, digest string) (store.Baseline, error)
	FailBaseline(ctx context.Context, digest, attemptID, why string, now time.Time) (bool, error)
	SetAttemptResult(ctx context.Context, id, resultJSON string) error
}

// Transitions is what the handler changes of a session as stored.
type Transitions interface {
	// Record stores what a write made, queueing a sync when the session
	// ended meanwhile.
	Record(ctx context.Context, id string, fn func(*store.Session)) (store.Session, error)
	// End ends the session with one reply, a sync queued.
	End(ctx context.Context, id string, outcome session.Outcome, reason, reply string) error
}

// Handle turns an attempt's result into the session's end: a validated
// commit through the Git Data API, pushed where ARCHITECTURE.md step 5
// says, a pull request, a review request and, through the final sync, the
// concluded check run and the edited progress comment. Each GitHub write is
// recorded before the next, so a replay continues where it stopped.
//
// Handle only loads: the session, its attempt's spec and result, and the
// proxy's token counts; it revokes the attempt's read tokens. What happens
// next is decided by decide over the steps interface, which githubSteps
// implements against GitHub and the store.
func (h *Handler) Handle(ctx context.Context, w *store.Work) error {
	sess, err := h.Store.GetSession(ctx, w.SessionID)
	if err != nil {
		return err
	}
	if sess.State() != session.Reporting {
		return nil
	}
	log := zerolog.Ctx(ctx).With().Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Logger()
	ctx = log.WithContext(ctx)
	a, err := h.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil {
		return err
	}
	var up contract.ResultUpload
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		return fmt.Errorf("stored result: %w", err)
	}
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		return fmt.Errorf("stored spec: %w", err)
	}
	if err := h.compareWithBase(ctx, a, spec, &up); err != nil {
		return err
	}
	h.RevokeTokens(ctx, a.ID)
	// The model proxy's counts are the app's own, never the supervisor's
	// word: they replace whatever the upload says.
	if used, err := h.Store.SessionUsage(ctx, a.ID); err == nil && used.Requests > 0 {
		tokens := used.Tokens()
		up.Evidence.Usage = &tokens
	} else {
		up.Evidence.Usage = nil
	}
	// Likewise the artifacts: what the store received, never the
	// supervisor's word.
	stored, err := h.Store.Artifacts(ctx, a.ID)
	if err != nil {
		return err
	}
	up.Evidence.Artifacts = receivedArtifacts(up.Evidence.Artifacts, stored)
	// The app's judgement of a reproduce-first attempt (reproduce.go).
	if withReproduction(spec, &up.Evidence) {
		if err := h.keepBaseline(ctx, a.ID, a.Result, up.Evidence.Baseline); err != nil {
			return err
		}
	}
	return decide(ctx, &githubSteps{h: h}, sess, spec, up)
}

// UnstartedBaseWait is how long after its attempt ended a report waits
// for a base's verify that the executor has not started (decision 0080).
const UnstartedBaseWait = 5 * time.Minute

// compareWithBase fills the evidence's baseline (decision 0080) and keeps
// it in the stored result before anything is decided, so the session's
// page, the check run's sync and the provenance read what the report
// read. While the base's verify may still come (its attempt's deadline has
// not passed) the report waits for it, postponed; once that deadline is
// past it is failed, and the comparison says so. A replay finds the
// comparison kept and keeps it.
func (h *Handler) compareWithBase(ctx context.Context, a store.Attempt, spec contract.Spec, up *contract.ResultUpload) error {
	if !h.Baselines || up.Evidence.Baseline != nil {
		return nil
	}
	var cmp *contract.BaselineComparison
	switch {
	case a.BaselineDigest != "":
		b, err := h.Store.GetBaseline(ctx, a.BaselineDigest)
		if errors.Is(err, store.ErrNotFound) {
			cmp = baselines.NotKept(a.BaselineDigest)
			break
		}
		if err != nil {
			return err
		}
		if b.Pending() {
			base, err := h.Store.GetAttempt(ctx, b.AttemptID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			now := h.Now()
			// A base's verify that has not started gets a few minutes
			// from the change's result, not the whole deadline: a busy
			// executor must not hold a finished session for an hour.
			until := base.Deadline
			if b.State == store.BaselineWaiting {
				if started := a.UpdatedAt.Add(UnstartedBaseWait); started.Before(until) {
					until = started
				}
			}
			if err == nil && now.Before(until) {
				wait := min(h.PollInterval*5, until.Sub(now))
				return h.Postpone(max(wait, time.Second), "waiting for the base's verify (attempt "+b.AttemptID+")")
			}
			b.State, b.Why = store.BaselineFailed, "the base's verify did not report by its deadline"
			if err == nil && now.Before(base.Deadline) {
				b.Why = "the executor had no room for the base's verify within " + UnstartedBaseWait.String() + " of the change's result"
			}
			if _, err := h.Store.FailBaseline(ctx, b.CacheDigest, b.AttemptID, b.Why, now); err != nil {
				return err
			}
			if h.StopAttempt != nil {
				h.StopAttempt(ctx, b.AttemptID) // its run would find nobody waiting for it
			}
			zerolog.Ctx(ctx).Warn().Str("baseline_attempt", b.AttemptID).Str("why", b.Why).Msg("no comparison with the base")
		}
		cmp = baselines.Compare(b, a.ID, up.Evidence)
	case len(spec.Verify) == 0:
		cmp = baselines.Unavailable("the session has no verify commands")
	default:
		return nil // never linked (made before baselines, or the link failed): nothing to say
	}
	// Kept into the stored upload as it was, the comparison added: the
	// upload the report works on has the app's usage and artifacts too.
	var stored contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &stored); err != nil {
		return fmt.Errorf("stored result: %w", err)
	}
	stored.Evidence.Baseline = cmp
	body, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	if err := h.Store.SetAttemptResult(ctx, a.ID, string(body)); err != nil {
		return err
	}
	up.Evidence.Baseline = cmp
	return nil
}

// receivedArtifacts is the evidence's artifact list as the app received
// the files: a collected entry takes the stored size, type and digest, or
// is refused when nothing arrived under its name; the supervisor's
// refusals stay as they are. A screenshot keeps its command's name only
// while what arrived is an image.
func receivedArtifacts(listed []contract.Artifact, stored []store.Artifact) []contract.Artifact {
	byName := make(map[string]store.Artifact, len(stored))
	for _, a := range stored {
		byName[a.Name] = a
	}
	out := make([]contract.Artifact, 0, len(listed))
	for _, l := range listed {
		if l.Refused == "" {
			got, ok := byName[l.Name]
			if !ok {
				l = contract.Artifact{Name: l.Name, Size: l.Size, Refused: "listed by the supervisor, never received", Screenshot: l.Screenshot}
			} else {
				l = contract.Artifact{Name: l.Name, Size: got.Size, ContentType: got.ContentType, SHA256: got.SHA256, Screenshot: l.Screenshot}
			}
			if l.Screenshot != "" && !contract.IsScreenshotImage(l.ContentType) {
				l.Screenshot = "" // the app's sniffing is the word: shown as a file, never as an image
			}
		}
		out = append(out, l)
	}
	return out
}
