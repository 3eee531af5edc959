package web

import (
	"net/http"
	"sort"
	"time"

	"github.com/inspecthq/inspect/app/store"
)

// snapshotView is one repository's row on the snapshots page.
type snapshotView struct {
	store.SnapshotRepo
	// Age is how old the newest snapshot is ("" for none yet).
	Age string
	// Building says a build is under way now.
	Building bool
}

// snapshotsPage lists, for each repository the user can read that wants
// snapshots, its newest snapshot (digest and age), the last build's
// result, and when the next is due.
func (s *Server) snapshotsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	repos, err := s.readable(r.Context(), v)
	if err != nil {
		s.log.Warn().Err(err).Str("login", v.Login).Msg("dashboard: listing the user's repositories failed")
		s.fail(w, http.StatusBadGateway, "GitHub did not say which repositories you can read. Try again.")
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
	for i, sr := range list {
		views[i] = snapshotView{SnapshotRepo: sr, Building: now.Before(sr.BuildingUntil)}
		if !sr.LastBuiltAt.IsZero() && sr.LastDigest != "" {
			views[i].Age = now.Sub(sr.LastBuiltAt).Round(time.Minute).String()
		}
	}
	s.render(w, http.StatusOK, "snapshots.html", map[string]any{"Viewer": v, "Repos": views})
}
