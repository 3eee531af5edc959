package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// pageSize is how many sessions a page of the list shows.
const pageSize = 50

var templateFuncs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"ms": func(n int64) string {
		return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
	},
	"isImage": isInlineImage,
	// markdown renders text written for GitHub (Inspect's outcome
	// sentence, which quotes commits in backticks) as the answer is.
	"markdown": renderMarkdown,
	"bytes":    humanBytes,
	// fared and flagged are how a test fared against the base in the
	// words the PR body uses (decision 0081).
	"fared":   render.FaredWords,
	"flagged": render.Flagged,
}

// isInlineImage says an artifact may be shown in the page: a raster image
// as sniffed from its bytes (never SVG, which can carry script; the
// collector's sniffing never calls anything SVG anyway).
func isInlineImage(contentType string) bool {
	switch contentType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// artifact serves one of a session's artifacts from the store, to those
// who may read the session: an image inline, anything else as a download,
// and never as something the browser would run.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.viewableSession(w, r, viewerOf(r))
	if !ok {
		return
	}
	name := r.PathValue("name")
	if name == contract.AgentStateName {
		// The agent's kept conversation lives among the artifacts but is
		// none: it is the next turn's, not a reader's.
		s.fail(w, http.StatusNotFound, "The session has no such artifact.")
		return
	}
	s.serveArtifact(w, r, sess.AttemptID, name)
}

// serveArtifact writes the attempt's artifact name: an image inline,
// anything else as a download, and never as something the browser would
// run. The caller has checked who may read it.
func (s *Server) serveArtifact(w http.ResponseWriter, r *http.Request, attemptID, name string) {
	a, err := s.st.ArtifactContent(r.Context(), attemptID, name)
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, http.StatusNotFound, "The session has no such artifact.")
		return
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("dashboard: reading an artifact failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not read the artifact. Try again.")
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if isInlineImage(a.ContentType) {
		w.Header().Set("Content-Type", a.ContentType)
	} else {
		name := strings.NewReplacer(`"`, "", `\`, "", "\n", "", "\r", "").Replace(path.Base(a.Name))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	_, _ = w.Write(a.Content) // a write to a gone browser
}

// attestation serves an attempt's signed provenance (the DSSE envelope,
// decision 0078) to a reader of the session's repository: it names the
// commands and tests of a possibly private repository, so it is behind
// the same sign-in and permission check as the session's page.
func (s *Server) attestation(w http.ResponseWriter, r *http.Request) {
	sess, _, ok := s.viewableSession(w, r, viewerOf(r))
	if !ok {
		return
	}
	a, err := s.st.GetAttestation(r.Context(), r.PathValue("attempt"))
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.SessionID != sess.ID) {
		s.fail(w, http.StatusNotFound, "The session has no attestation for that attempt.")
		return
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("dashboard: reading an attestation failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not read the attestation. Try again.")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, _ = w.Write([]byte(a.Envelope)) // a write to a gone browser
}

// listFilter reads the list's query: each value is matched exactly in the
// store, never put into SQL text.
type listFilter struct {
	Repo, State, Outcome, Trigger, Requester, Before string
}

func (f listFilter) query(before string) string {
	q := url.Values{}
	for k, v := range map[string]string{"repo": f.Repo, "state": f.State, "outcome": f.Outcome, "trigger": f.Trigger, "requester": f.Requester, "before": before} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	ctx := r.Context()
	repos, err := s.readable(ctx, v)
	if err != nil {
		s.failUnreadable(w, v, err)
		return
	}
	q := r.URL.Query()
	lf := listFilter{Repo: q.Get("repo"), State: q.Get("state"), Outcome: q.Get("outcome"), Trigger: q.Get("trigger"),
		Requester: q.Get("requester"), Before: q.Get("before")}
	f := store.SessionFilter{State: session.State(lf.State), Outcome: session.Outcome(lf.Outcome), Trigger: lf.Trigger, Requester: lf.Requester}
	var names []string
	for id, rr := range repos {
		f.RepoIDs = append(f.RepoIDs, id)
		names = append(names, rr.Owner+"/"+rr.Name)
		if lf.Repo != "" && strings.EqualFold(lf.Repo, rr.Owner+"/"+rr.Name) {
			f.RepoID = id
		}
	}
	sort.Strings(names)
	sort.Slice(f.RepoIDs, func(i, j int) bool { return f.RepoIDs[i] < f.RepoIDs[j] })
	if lf.Repo != "" && f.RepoID == 0 {
		f.RepoIDs = nil // a repository the user cannot read lists nothing
	}
	if lf.Before != "" {
		b, err := s.st.GetSession(ctx, lf.Before)
		if err == nil && repos[b.RepoID].ID != 0 {
			f.Before = &b
		}
	}
	list, err := s.st.ListSessions(ctx, f, pageSize+1)
	if err != nil {
		s.log.Error().Err(err).Msg("dashboard: listing sessions failed")
		s.fail(w, http.StatusServiceUnavailable, "Inspect could not list the sessions. Try again.")
		return
	}
	next := ""
	if len(list) > pageSize {
		list = list[:pageSize]
		next = "/sessions?" + lf.query(list[len(list)-1].ID)
	}
	s.render(w, http.StatusOK, "sessions.html", map[string]any{
		"Viewer": v, "Sessions": list, "Filter": lf, "Repos": names, "Next": next,
		"States":   []session.State{session.Queued, session.Preparing, session.Dispatched, session.Running, session.Done},
		"Outcomes": []session.Outcome{session.Changed, session.NoChange, session.VerificationFailed, session.ChangeRefused, session.Refused, session.TimedOut, session.Cancelled, session.Errored},
		"Triggers": []string{session.KindComment.StoredName(), session.KindReviewComment.StoredName(), session.KindLabel.StoredName(), session.KindRepair.StoredName(), session.KindRetry.StoredName()},
	})
}

// sessionView is what a session's page shows.
type sessionView struct {
	store.Session
	IssueURL, PRURL, CheckURL string
	// BranchURL is a branch session's branch on GitHub.
	BranchURL string
	// BuildURL is the Buildkite build the attempt ran as, when it has one.
	BuildURL string
	Evidence *contract.Evidence
	// Usage is the session's model usage: the model proxy's counts in the
	// store (the supervisor's evidence carries none), or the evidence's
	// when the store has none; nil when there was none.
	Usage *contract.TokenUsage
	// Model is the attempt's model; Cost its tokens at the server's
	// prices, "" when it has none.
	Model, Cost string
	// SnapshotAge is how old the restored snapshot was when the attempt
	// started.
	SnapshotAge string
	// Diff is the attempt's change, file by file; nil when it has none.
	Diff *diffView
	// Turns are the session's conversation: its request, then the
	// messages that steered it (decision 0071). Recorder is the running
	// attempt's flight recorder (nil before the first); Budget the
	// session's token budget (0: none).
	Turns    []turnView
	Recorder *recorderView
	Budget   int64
	// Answer is the agent's final answer rendered as sanitized Markdown
	// (decision 0068); "" when it gave none. It is apart from Detail,
	// Inspect's own sentence about the outcome.
	Answer template.HTML
	// StartedFresh says the agent started a new conversation instead of
	// resuming the one its session continues, and why; "" when it did not.
	StartedFresh string
	// ProvenanceURL is the attempt's signed provenance (decision 0078),
	// "" when it has none.
	ProvenanceURL string
	// Screenshots are the attempt's screenshots paired with the base's
	// (decision 0083).
	Screenshots []screenshots.Pair
}

// viewableSession is the request's session ({id}) if v may read its
// repository; otherwise it has answered the request and ok is false. A
// session in a repository v cannot read gets the same 404 as one that does
// not exist, so that it does not show that it exists.
func (s *Server) viewableSession(w http.ResponseWriter, r *http.Request, v *viewer) (sess store.Session, ref repoRef, ok bool) {
	sess, err := s.st.GetSession(r.Context(), r.PathValue("id"))
	if err == nil {
		var repos map[int64]repoRef
		if repos, err = s.readable(r.Context(), v); err == nil {
			if ref, ok = repos[sess.RepoID]; !ok {
				err = store.ErrNotFound
			}
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.fail(w, http.StatusNotFound, "There is no such session, or you cannot read its repository.")
		return store.Session{}, repoRef{}, false
	case err != nil:
		s.log.Warn().Err(err).Msg("dashboard: reading a session failed")
		s.fail(w, http.StatusBadGateway, "Inspect could not read the session. Try again.")
		return store.Session{}, repoRef{}, false
	}
	return sess, ref, true
}

// attemptView adds what the session's current attempt says: its build
// link, its model, its evidence, and from those (and view.Usage) the cost
// and the snapshot's age. Each part is best effort.
func (s *Server) attemptView(view *sessionView, a store.Attempt) {
	if strings.HasPrefix(a.ExternalID, "https://") || strings.HasPrefix(a.ExternalID, "http://") {
		view.BuildURL = a.ExternalID // a Buildkite build's web URL
	}
	var spec contract.Spec
	if json.Unmarshal([]byte(a.Spec), &spec) == nil {
		view.Model = spec.Agent.Model
	}
	var up contract.ResultUpload
	if a.Result != "" && json.Unmarshal([]byte(a.Result), &up) == nil {
		ev := up.Evidence
		view.Evidence = &ev
		if strings.TrimSpace(ev.FinalAnswer) != "" {
			view.Answer = renderMarkdown(ev.FinalAnswer)
		}
		if view.Usage == nil {
			view.Usage = ev.Usage
		}
		view.StartedFresh = render.AgentStartedFresh(ev.AgentState)
		if w := ev.Workspace; w != nil && !w.SnapshotCreatedAt.IsZero() && !ev.StartedAt.IsZero() {
			view.SnapshotAge = ev.StartedAt.Sub(w.SnapshotCreatedAt).Round(time.Minute).String()
		}
	}
	if u := view.Usage; u != nil && s.cost != nil && view.Model != "" {
		if usd, ok := s.cost(view.Model, *u); ok {
			view.Cost = render.Money(usd) // as the PR body and the check run show it
		}
	}
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	sess, _, ok := s.viewableSession(w, r, v)
	if !ok {
		return
	}
	view := sessionView{Session: sess, Budget: s.budget}
	s.turnsView(r, &view)
	base := strings.TrimSuffix(s.gh.webURL, "/") + "/" + url.PathEscape(sess.RepoOwner) + "/" + url.PathEscape(sess.RepoName)
	switch target := sess.Target(); {
	case target.IsBranch():
		parts := strings.Split(target.BranchName(), "/")
		for i, p := range parts {
			parts[i] = url.PathEscape(p)
		}
		view.BranchURL = base + "/tree/" + strings.Join(parts, "/")
	case target.Number() > 0:
		kind := "issues"
		if target.IsPullRequest() {
			kind = "pull"
		}
		view.IssueURL = fmt.Sprintf("%s/%s/%d", base, kind, target.Number())
	}
	if sess.PRNumber > 0 {
		view.PRURL = fmt.Sprintf("%s/pull/%d", base, sess.PRNumber)
	}
	if sess.CheckRunID > 0 {
		view.CheckURL = fmt.Sprintf("%s/runs/%d", base, sess.CheckRunID)
	}
	if sess.AttemptID != "" {
		switch u, err := s.st.SessionUsage(r.Context(), sess.AttemptID); {
		case err != nil:
			s.log.Warn().Err(err).Str("session_id", sess.ID).Msg("dashboard: reading the model usage failed")
		case u.Requests > 0:
			view.Usage = &contract.TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Requests: int(u.Requests),
				CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
		}
		if a, err := s.st.GetAttempt(r.Context(), sess.AttemptID); err == nil {
			s.attemptView(&view, a)
			if view.Screenshots, err = screenshots.Pairs(r.Context(), s.st, a, sess.RepoID); err != nil {
				// The rest of the page is worth showing without them.
				s.log.Warn().Err(err).Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Msg("dashboard: reading the screenshots failed")
			}
		}
		switch d, err := s.st.AttemptDiff(r.Context(), sess.AttemptID); {
		case err == nil:
			view.Diff = &diffView{Files: parseDiff(d.Patch), Truncated: d.Truncated, Cap: contract.FormatBytes(contract.MaxPatchBytes)}
		case !errors.Is(err, store.ErrNotFound):
			// The rest of the page is worth showing without it.
			s.log.Warn().Err(err).Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Msg("dashboard: reading the diff failed")
		}
		switch _, err := s.st.GetAttestation(r.Context(), sess.AttemptID); {
		case err == nil:
			view.ProvenanceURL = "/sessions/" + url.PathEscape(sess.ID) + "/attempts/" + url.PathEscape(sess.AttemptID) + "/provenance"
		case !errors.Is(err, store.ErrNotFound):
			s.log.Warn().Err(err).Str("session_id", sess.ID).Str("attempt_id", sess.AttemptID).Msg("dashboard: reading the attestation failed")
		}
	}
	s.render(w, http.StatusOK, "session.html", map[string]any{"Viewer": v, "S": view, "Asked": r.URL.Query().Get("asked")})
}
