package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// baseArtifact serves one of the session's baseline attempt's artifacts
// (its screenshots' base side, decision 0083), to those who may read the
// session, as the session's own artifacts are: the baseline attempt is
// the one the session's attempt's evidence names, of the same repository.
func (s *Server) baseArtifact(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.viewableSession(w, r, viewerOf(r))
	if !ok {
		return
	}
	name := r.PathValue("name")
	if name == contract.AgentStateName || sess.AttemptID == "" {
		s.fail(w, http.StatusNotFound, "The session's base has no such artifact.")
		return
	}
	a, err := s.st.GetAttempt(r.Context(), sess.AttemptID)
	var base store.Attempt
	if err == nil {
		base, ok, err = screenshots.Base(r.Context(), s.st, a, sess.RepoID)
	}
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && !ok):
		s.fail(w, http.StatusNotFound, "The session's base has no such artifact.")
		return
	case err != nil:
		s.log.Warn().Err(err).Str("session_id", sess.ID).Msg("dashboard: reading the session's base failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not read the artifact. Try again.")
		return
	}
	s.serveArtifact(w, r, base.ID, name)
}

// publicScreenshot serves a published screenshot at its digest, without
// sign-in (web.public_screenshot_thumbnails, decision 0083): only a
// digest that the report published for a public repository's screenshot,
// whose stored bytes still have it, with the extension of its type. The
// bytes at a digest never change, so it may be cached for good.
func (s *Server) publicScreenshot(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	hexDigest, ext, _ := strings.Cut(strings.TrimPrefix(file, "sha256-"), ".")
	notFound := func() { http.Error(w, "not found", http.StatusNotFound) }
	if !strings.HasPrefix(file, "sha256-") || len(hexDigest) != 64 || strings.Trim(hexDigest, "0123456789abcdef") != "" {
		notFound()
		return
	}
	a, err := s.st.PublicScreenshot(r.Context(), hexDigest)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notFound()
		return
	case err != nil:
		s.log.Warn().Err(err).Msg("dashboard: reading a public screenshot failed")
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	case screenshots.Extension(a.ContentType) != "."+ext:
		notFound()
		return
	}
	w.Header().Set("Content-Type", a.ContentType)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, _ = w.Write(a.Content) // a write to a gone client
}
