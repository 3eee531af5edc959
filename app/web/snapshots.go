package web

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// snapshotView is one repository's part of the snapshots page.
type snapshotView struct {
	store.SnapshotRepo
	// Age is how old the newest snapshot is ("" for none yet).
	Age string
	// Size is its layers' compressed size, for people ("1.5 GiB"; "" when
	// not recorded).
	Size string
	// ShortDigest and ShortSHA are the digest and commit, cut to be read.
	ShortDigest, ShortSHA string
	// Drift is how far the default branch is ahead of the snapshot.
	Drift drift
	// Building says a build is under way now.
	Building bool
	// LogSize is the last build's log's size, for people.
	LogSize string
}

// snapshotsPage shows, for each repository the user can read that wants
// snapshots: its newest snapshot (digest, the commit and branch it was
// built from, age, size and layers), the default branch's drift since,
// the last build's result, its setup log and its setup's egress (the
// registry requests, collapsed, and the refusals, shown), and when the
// next is due.
func (s *Server) snapshotsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	repos, err := s.readable(r.Context(), v)
	if err != nil {
		s.failUnreadable(w, v, err)
		return
	}
	ids := make([]int64, 0, len(repos))
	for id := range repos {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	list, err := s.st.SnapshotRepos(r.Context(), ids)
	if err != nil {
		s.log.Error().Err(err).Msg("dashboard: listing snapshots failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not list the snapshots. Try again.")
		return
	}
	now := s.now()
	views := make([]snapshotView, len(list))
	var targets []driftTarget
	var targetOf []int // views' indexes, by target
	for i, sr := range list {
		views[i] = snapshotView{SnapshotRepo: sr, Building: now.Before(sr.BuildingUntil), ShortDigest: short(sr.LastDigest, len("sha256:")+12), ShortSHA: short(sr.LastSHA, 7)}
		if !sr.LastBuiltAt.IsZero() && sr.LastDigest != "" {
			views[i].Age = now.Sub(sr.LastBuiltAt).Round(time.Minute).String()
		}
		if sr.LastLayers > 0 {
			views[i].Size = humanBytes(sr.LastSize)
		}
		if sr.LastLog != "" {
			views[i].LogSize = humanBytes(int64(len(sr.LastLog)))
		}
		if ref, ok := repos[sr.RepoID]; ok && sr.LastSHA != "" && sr.LastBranch != "" {
			targets = append(targets, driftTarget{repoID: sr.RepoID, owner: ref.Owner, name: ref.Name, sha: sr.LastSHA, branch: sr.LastBranch})
			targetOf = append(targetOf, i)
		}
	}
	for j, d := range s.drifts(r.Context(), v, targets) {
		views[targetOf[j]].Drift = d
	}
	s.render(w, http.StatusOK, "snapshots.html", map[string]any{"Viewer": v, "Repos": views})
}

// short is s cut to n bytes (s is ASCII: a digest or a SHA).
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// humanBytes is n bytes for people, in binary units: "900 B", "1.5 KiB",
// "12 MiB", "3.2 GiB" (one decimal below ten).
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v, unit = v/1024, u
		if v < 1024 {
			break
		}
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}
