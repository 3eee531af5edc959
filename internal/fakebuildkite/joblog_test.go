package fakebuildkite

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// The job log endpoint answers as Buildkite's REST docs describe it.
func TestJobLogAsDocumented(t *testing.T) {
	s := New(t)
	log := "~~~ Running tests\n" + strings.Repeat("ok\n", 100) + "--- FAIL: TestAdd\nexit 1\n"
	b := s.AddFinishedBuild("acme", "ci", "failed", log)
	empty := s.AddFinishedBuild("acme", "ci", "failed", "")
	logURL := s.APIURL() + "organizations/acme/pipelines/ci/builds/1/jobs/" + b.JobID + "/log"
	get := func(url, accept, rng string, auth bool) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+s.Token())
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(body)
	}

	code, _, body := get(logURL, "", "", true)
	var js struct {
		URL         string  `json:"url"`
		Content     string  `json:"content"`
		Size        int     `json:"size"`
		HeaderTimes []int64 `json:"header_times"`
	}
	if err := json.Unmarshal([]byte(body), &js); code != 200 || err != nil || js.Content != log || js.Size != len(log) || js.URL != logURL || len(js.HeaderTimes) != 2 {
		t.Errorf("JSON: %d %+v %v", code, js, err)
	}
	if code, _, body := get(logURL, "text/plain", "", true); code != 200 || body != log {
		t.Errorf("text/plain: %d %q", code, body)
	}
	if code, _, body := get(logURL+".txt", "", "", true); code != 200 || body != log {
		t.Errorf(".txt: %d %q", code, body)
	}
	code, h, body := get(logURL, "text/plain", "bytes=-15", true)
	if code != http.StatusPartialContent || body != "TestAdd\nexit 1\n" || h.Get("Content-Range") != "bytes "+itoa(len(log)-15)+"-"+itoa(len(log)-1)+"/"+itoa(len(log)) || h.Get("Accept-Ranges") != "bytes" {
		t.Errorf("range: %d %q %v", code, body, h)
	}
	for _, tc := range []struct {
		url, accept, rng string
		auth             bool
		want             int
	}{
		{logURL, "", "bytes=-10", true, http.StatusBadRequest},            // a range needs text/plain
		{logURL, "text/plain", "bytes=0-10", true, http.StatusBadRequest}, // only suffix ranges
		{logURL, "text/plain", "bytes=-0", true, http.StatusBadRequest},
		{strings.Replace(logURL, "/builds/1/", "/builds/2/", 1), "text/plain", "bytes=-10", true, http.StatusNotFound}, // build 2's job is another
		{s.APIURL() + "organizations/acme/pipelines/ci/builds/2/jobs/" + empty.JobID + "/log", "text/plain", "bytes=-10", true, http.StatusRequestedRangeNotSatisfiable},
		{logURL, "", "", false, http.StatusUnauthorized},
	} {
		if code, _, body := get(tc.url, tc.accept, tc.rng, tc.auth); code != tc.want {
			t.Errorf("%s accept %q range %q: %d %s, want %d", tc.url, tc.accept, tc.rng, code, body, tc.want)
		}
	}
	reqs := s.RequestsMatching(http.MethodGet, "/v2/organizations/acme/pipelines/ci/builds/*/jobs/*/log")
	if len(reqs) == 0 || reqs[0].Auth != "bearer" || reqs[2].Range != "bytes=-15" || reqs[2].Accept != "text/plain" {
		t.Errorf("recorded %+v", reqs)
	}
	if got := JobWebURL(b); got != "https://buildkite.com/acme/ci/builds/1#"+b.JobID {
		t.Errorf("web URL %s", got)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
