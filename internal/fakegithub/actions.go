package fakegithub

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// GitHub Actions job logs. GET .../actions/jobs/{job_id}/logs answers 302
// with a short-lived download URL; here that URL is served by the same
// server, under logDownloadPrefix, without authentication (as GitHub's
// signed URLs are), as text/plain.

const (
	docsJobLogs = "https://docs.github.com/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-job"

	// logDownloadPrefix is where the download URLs live, outside /api/v3.
	logDownloadPrefix = "/_fakegithub/job-logs/"

	// logLinkLifetime is how long a download URL works. GitHub: "The URL
	// expires after 1 minute."
	logLinkLifetime = time.Minute
)

// logLink is one download URL handed out.
type logLink struct {
	repo    string // repoKey
	jobID   int64
	expires time.Time
}

// SetJobLog sets the log of a GitHub Actions job (on GitHub, an Actions
// check run's id is its job's id: see AddForeignCheckRun).
func (s *Server) SetJobLog(owner, repo string, jobID int64, log string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mustRepo(owner, repo).jobLogs[jobID] = log
}

func (s *Server) actionsRoutes() {
	s.handle("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", docsJobLogs, repoGate("actions"), s.jobLogRedirect)
}

// jobLogRedirect answers 302 to a fresh download URL, or 404 when the job
// has no log.
func (s *Server) jobLogRedirect(c *call) response {
	id, ok := c.intPath("job_id")
	if !ok {
		return notFound(c.doc)
	}
	if _, ok := c.repo.jobLogs[id]; !ok {
		return notFound(c.doc)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	tok := hex.EncodeToString(b)
	now := s.now()
	for old, link := range s.logLinks {
		if !now.Before(link.expires) {
			delete(s.logLinks, old)
		}
	}
	s.logLinks[tok] = &logLink{repo: repoKey(c.repo.Owner, c.repo.Name), jobID: id, expires: now.Add(logLinkLifetime)}
	return response{status: http.StatusFound, header: http.Header{"Location": {s.URL() + logDownloadPrefix + tok}}}
}

// serveJobLog answers a download URL, with no credential needed (any
// Authorization header is ignored), and records the request. An unknown
// URL is a 404, an expired one a 403, as a blob store answers. FailNext
// rules apply to it as to any request.
func (s *Server) serveJobLog(w http.ResponseWriter, r *http.Request, at time.Time, tok string) {
	s.mu.Lock()
	status, text := http.StatusOK, ""
	link, ok := s.logLinks[tok]
	injected, failed := s.takeFailure(r.Method, r.URL.Path)
	switch {
	case failed:
		status, text = injected.status, http.StatusText(injected.status)+"\n"
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		status, text = http.StatusMethodNotAllowed, "Method not allowed.\n"
	case !ok || strings.Contains(tok, "/"):
		status, text = http.StatusNotFound, "The specified blob does not exist.\n"
	case !s.now().Before(link.expires):
		status, text = http.StatusForbidden, "Server failed to authenticate the request: the URL has expired.\n"
	default:
		rs := s.repos[link.repo]
		log, has := "", false
		if rs != nil {
			log, has = rs.jobLogs[link.jobID]
		}
		if has {
			text = log
		} else {
			status, text = http.StatusNotFound, "The specified blob does not exist.\n"
		}
	}
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Auth: authNone, Status: status, At: at,
	})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(text))
	}
}
