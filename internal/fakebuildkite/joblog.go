package fakebuildkite

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// Job logs, as Buildkite's REST documentation ("Get a job's log output")
// describes them:
//
//   - GET .../builds/{number}/jobs/{job}/log answers JSON: url, content,
//     size and header_times (one nanosecond timestamp per section header:
//     a line starting "~~~ ", "--- " or "+++ ").
//   - With Accept: text/plain, or at .../log.txt, the raw log.
//   - A suffix range ("Range: bytes=-N") with Accept: text/plain answers
//     206 with the last N bytes, Content-Range and Accept-Ranges; a range
//     of another form, or without text/plain, is a 400; a suffix range of
//     an empty log a 416.
//   - read_build_logs is the scope it needs; this stand-in checks only the
//     token, as it does everywhere.

// AddFinishedBuild records a finished build of any pipeline, with one job
// whose log is log, without running anything: a CI build another team's
// pipeline ran, for a repair to read. state is "passed" or "failed". The
// pipeline need not exist in the stand-in.
func (s *Server) AddFinishedBuild(org, pipeline, state, log string) Build {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(org, pipeline)
	now := s.now()
	exit := 0
	if state != "passed" {
		exit = 1
	}
	b := &build{
		id: standin.UUID(), org: org, slug: pipeline, number: len(s.builds[k]) + 1, state: state,
		message: "CI", branch: "main", createdAt: now, startedAt: now, finishedAt: now,
		job: &job{id: standin.UUID(), step: Step{Label: ":test_tube: test", Command: "make test"}, state: state,
			exitStatus: &exit, startedAt: now, finishedAt: now, log: log},
	}
	s.builds[k] = append(s.builds[k], b)
	return s.snapshot(b)
}

// JobWebURL is a job's link as Buildkite's API gives it (the job's
// web_url), on Buildkite's real web host: what a commit status's target
// URL holds. The stand-in's own build pages use another host.
func JobWebURL(b Build) string {
	return fmt.Sprintf("https://buildkite.com/%s/%s/builds/%d#%s", b.Org, b.Pipeline, b.Number, b.JobID)
}

var sectionHeader = regexp.MustCompile(`(?m)^(?:~~~|---|\+\+\+) `)

func (s *Server) getJobLog(c *call) response {
	b, bad := s.findBuild(c)
	if bad != nil {
		return *bad
	}
	id := c.r.PathValue("job")
	raw := strings.HasSuffix(c.r.URL.Path, "/log.txt")
	if b.job == nil || b.job.id != id {
		return errResp(http.StatusNotFound, "No job found")
	}
	log := b.job.log
	text := raw || strings.Contains(c.r.Header.Get("Accept"), "text/plain")
	if rng := c.r.Header.Get("Range"); rng != "" {
		if !text {
			return errResp(http.StatusBadRequest, "Range requests are only supported with Accept: text/plain")
		}
		n, err := strconv.Atoi(strings.TrimPrefix(rng, "bytes=-"))
		if !strings.HasPrefix(rng, "bytes=-") || err != nil || n <= 0 {
			return errResp(http.StatusBadRequest, "Only suffix byte ranges (bytes=-N) are supported")
		}
		if len(log) == 0 {
			return errResp(http.StatusRequestedRangeNotSatisfiable, "Range Not Satisfiable")
		}
		start := max(len(log)-n, 0)
		h := http.Header{}
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Accept-Ranges", "bytes")
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(log)-1, len(log)))
		return response{status: http.StatusPartialContent, raw: []byte(log[start:]), header: h}
	}
	if text {
		h := http.Header{}
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Accept-Ranges", "bytes")
		return response{status: http.StatusOK, raw: []byte(log), header: h}
	}
	times := []int64{}
	at := b.job.startedAt
	for range sectionHeader.FindAllStringIndex(log, -1) {
		times = append(times, at.UnixNano())
		at = at.Add(time.Millisecond)
	}
	return jsonResp(http.StatusOK, map[string]any{
		"url":          fmt.Sprintf("%s/jobs/%s/log", s.buildAPIURL(b), id),
		"content":      log,
		"size":         len(log),
		"header_times": times,
	})
}
