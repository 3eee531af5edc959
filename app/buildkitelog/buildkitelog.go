// Package buildkitelog reads the end of a Buildkite job's log for a
// repair, when a failing commit status or check run links to a job of the
// Buildkite organization the server is configured for (decision 0076), or
// to one of its builds (Buildkite's build-level commit statuses do): then
// the build's first failed command job's.
//
// The link only says which job: its host must be Buildkite's web host,
// its organization the configured one, and the request goes to the
// configured REST base (buildkite.api_url) with the server's token, never
// to anything the link names. Any other link (another organization,
// another host, a lookalike, one with userinfo or a port) reads nothing.
// The log is untrusted text: the caller fences it as it does GitHub
// Actions job logs.
package buildkitelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// WebHost is Buildkite's web host, where job links point.
const WebHost = "buildkite.com"

// Job names one job of a build.
type Job struct {
	Org, Pipeline string
	Build         int
	ID            string // the job's UUID
}

var (
	slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// ParseJobURL reads a job's web link, as Buildkite's API gives it
// (https://buildkite.com/<org>/<pipeline>/builds/<n>#<job uuid>), and
// reports whether it is one of org's jobs.
func ParseJobURL(raw, org string) (Job, bool) {
	job, ok := parseLink(raw, org)
	return job, ok && job.ID != ""
}

// parseLink reads a job's link, or a build's (the same without the
// fragment: what Buildkite's build-level commit statuses link to, with
// ID ""), of one of org's pipelines.
func parseLink(raw, org string) (Job, bool) {
	if org == "" || len(raw) > 2048 {
		return Job{}, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Host != WebHost || u.Opaque != "" || u.RawQuery != "" {
		return Job{}, false
	}
	if u.RawPath != "" && u.RawPath != u.Path {
		return Job{}, false // escapes in the path: no slug has any
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if len(parts) != 4 || parts[0] != org || parts[2] != "builds" || !slugRE.MatchString(parts[1]) {
		return Job{}, false
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil || n <= 0 || strconv.Itoa(n) != parts[3] {
		return Job{}, false
	}
	if u.Fragment != "" && !uuidRE.MatchString(u.Fragment) {
		return Job{}, false
	}
	return Job{Org: org, Pipeline: parts[1], Build: n, ID: u.Fragment}, true
}

// Reader reads job logs through Buildkite's REST API.
type Reader struct {
	// APIBase is the configured REST base (buildkite.api_url), with its
	// trailing slash: https://api.buildkite.com/ .
	APIBase string
	// Org is the configured organization: only its jobs are read.
	Org string
	// Token is the server's API token (read_build_logs).
	Token string
	// HTTP makes the requests; nil means a client with a 30 s timeout.
	// Redirects are never followed: the token goes to APIBase alone.
	HTTP *http.Client
}

// errRedirect refuses a redirect, so that the token never leaves APIBase.
var errRedirect = errors.New("a redirect from the job log endpoint is not followed")

// Tail returns the last max bytes of the log of the job rawURL links to,
// from its first whole line, terminal escapes removed, as valid UTF-8;
// "" and no error when the link is not one of Org's jobs or builds
// (nothing is requested then) or the log is empty. For a build's link,
// the log is its first failed command job's, named on the first line.
func (r *Reader) Tail(ctx context.Context, rawURL string, max int) (string, error) {
	job, ok := parseLink(rawURL, r.Org)
	if !ok || max <= 0 {
		return "", nil
	}
	base, err := url.Parse(r.APIBase)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return "", fmt.Errorf("buildkite.api_url %q is not a URL", r.APIBase)
	}
	build := base.JoinPath("v2", "organizations", job.Org, "pipelines", job.Pipeline, "builds", strconv.Itoa(job.Build))
	heading := ""
	if job.ID == "" {
		id, name, err := r.failedJob(ctx, build)
		if err != nil || id == "" {
			return "", err
		}
		job.ID, heading = id, fmt.Sprintf("(the build's first failed job: %s)\n", name)
	}
	tail, err := r.logTail(ctx, build.JoinPath("jobs", job.ID, "log"), max)
	if err != nil || tail == "" {
		return "", err
	}
	return heading + tail, nil
}

// do sends req with the server's token, following no redirect.
func (r *Reader) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+r.Token)
	c := http.Client{Timeout: 30 * time.Second}
	if r.HTTP != nil {
		c = *r.HTTP
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	resp, err := c.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is ours, but keep errors short and alike
		}
		return nil, err
	}
	return resp, nil
}

// maxBuildBytes bounds a build's JSON, jobs included.
const maxBuildBytes = 8 << 20

// failedJob is the id and name of a build's first command job that
// failed (a soft failure is none), or "" when none did.
func (r *Reader) failedJob(ctx context.Context, build *url.URL) (string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, build.String(), nil)
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.do(req)
	if err != nil {
		return "", "", fmt.Errorf("reading the build: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("reading the build: Buildkite answered %s", resp.Status)
	}
	var b struct {
		Jobs []struct {
			ID         string `json:"id"`
			Type       string `json:"type"`
			Name       string `json:"name"`
			State      string `json:"state"`
			SoftFailed bool   `json:"soft_failed"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBuildBytes)).Decode(&b); err != nil {
		return "", "", fmt.Errorf("reading the build: %w", err)
	}
	for _, j := range b.Jobs {
		if j.Type == "script" && (j.State == "failed" || j.State == "timed_out") && !j.SoftFailed && uuidRE.MatchString(j.ID) {
			return j.ID, j.Name, nil
		}
	}
	return "", "", nil
}

// logTail reads the end of one job's log.
func (r *Reader) logTail(ctx context.Context, endpoint *url.URL, max int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return "", err
	}
	// Buildkite serves the raw log as text/plain, and its end alone for a
	// suffix range.
	req.Header.Set("Accept", "text/plain")
	req.Header.Set("Range", fmt.Sprintf("bytes=-%d", max))
	resp, err := r.do(req)
	if err != nil {
		return "", fmt.Errorf("reading the job log: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent:
	case http.StatusRequestedRangeNotSatisfiable:
		return "", nil // an empty log
	default:
		return "", fmt.Errorf("reading the job log: Buildkite answered %s", resp.Status)
	}
	// A 200 is the whole log (a server that ignores Range): keep its end.
	tail, cut, err := lastBytes(io.LimitReader(resp.Body, maxRead), max)
	if err != nil {
		return "", fmt.Errorf("reading the job log: %w", err)
	}
	text := stripTerminal(string(tail))
	if cut || (resp.StatusCode == http.StatusPartialContent && !fromStart(resp.Header.Get("Content-Range"))) {
		// Start at a line: the cut may have split one (or an escape).
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return strings.ToValidUTF8(text, ""), nil
}

// fromStart reports whether a Content-Range ("bytes 0-99/100") starts at
// the log's first byte: the suffix range covered the whole log.
func fromStart(contentRange string) bool {
	return strings.HasPrefix(contentRange, "bytes 0-")
}

// maxRead bounds what is read of a log whose server ignored the range.
const maxRead = 32 << 20

// lastBytes reads r and keeps its last max bytes; cut says whether more
// came before them.
func lastBytes(r io.Reader, max int) ([]byte, bool, error) {
	var buf []byte
	cut := false
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if over := len(buf) - max; over > 0 {
			buf = append(buf[:0], buf[over:]...)
			cut = true
		}
		if err == io.EOF {
			return buf, cut, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}

// terminal matches what Buildkite's raw logs carry besides text: ANSI
// escape sequences (colours, cursor moves), the agent's timestamp
// markers (ESC _ bk;t=... BEL) and other string sequences.
var terminal = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]_P^X][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])`)

func stripTerminal(s string) string {
	if !strings.Contains(s, "\x1b") {
		return strings.ReplaceAll(s, "\r\n", "\n")
	}
	return strings.ReplaceAll(terminal.ReplaceAllString(s, ""), "\r\n", "\n")
}
