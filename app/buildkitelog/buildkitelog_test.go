package buildkitelog_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/inspecthq/inspect/app/buildkitelog"
	"github.com/inspecthq/inspect/internal/fakebuildkite"
)

const jobID = "b63254c0-3271-4a98-8270-7cfbd6c2f14e"

// Only a job link of the configured organization on Buildkite's own web
// host names a job.
func TestParseJobURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://buildkite.com/acme/ci/builds/12#" + jobID, true},
		{"https://buildkite.com/acme/web-app_2/builds/1#" + jobID, true},
		{"https://buildkite.com/other/ci/builds/12#" + jobID, false},             // another organization
		{"https://buildkite.com/acme/ci/builds/12", false},                       // the build, no job
		{"https://buildkite.com/acme/ci/builds/12#not-a-uuid", false},            // not a job id
		{"https://buildkite.com/acme/ci/builds/012#" + jobID, false},             // not a build number as Buildkite writes one
		{"https://buildkite.com/acme/ci/builds/0#" + jobID, false},               // no build 0
		{"https://buildkite.com/acme/ci/builds/12/x#" + jobID, false},            // another page
		{"https://buildkite.com/acme/../acme/ci/builds/12#" + jobID, false},      // dot segments
		{"https://buildkite.com/acme/c%69/builds/12#" + jobID, false},            // escapes
		{"https://buildkite.com/acme/ci/builds/12?jid=x#" + jobID, false},        // a query
		{"http://buildkite.com/acme/ci/builds/12#" + jobID, false},               // not https
		{"https://buildkite.com:8443/acme/ci/builds/12#" + jobID, false},         // a port
		{"https://buildkite.com./acme/ci/builds/12#" + jobID, false},             // a trailing dot
		{"https://BUILDKITE.COM/acme/ci/builds/12#" + jobID, false},              // another spelling
		{"https://api.buildkite.com/acme/ci/builds/12#" + jobID, false},          // the API's host
		{"https://buildkite.com.evil.example/acme/ci/builds/12#" + jobID, false}, // a lookalike
		{"https://evilbuildkite.com/acme/ci/builds/12#" + jobID, false},
		{"https://buildkite.com@evil.example/acme/ci/builds/12#" + jobID, false}, // userinfo, another host
		{"https://user:pw@buildkite.com/acme/ci/builds/12#" + jobID, false},      // userinfo
		{"https://evil.example/acme/ci/builds/12#" + jobID, false},
		{"https://ci.example.com/buildkite.com/acme/ci/builds/12#" + jobID, false},
		{"buildkite.com/acme/ci/builds/12#" + jobID, false},
		{"", false},
	} {
		job, ok := buildkitelog.ParseJobURL(tc.url, "acme")
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v (%+v)", tc.url, ok, tc.ok, job)
		}
	}
	job, _ := buildkitelog.ParseJobURL("https://buildkite.com/acme/ci/builds/12#"+jobID, "acme")
	if job != (buildkitelog.Job{Org: "acme", Pipeline: "ci", Build: 12, ID: jobID}) {
		t.Errorf("job %+v", job)
	}
	if _, ok := buildkitelog.ParseJobURL("https://buildkite.com/acme/ci/builds/12#"+jobID, ""); ok {
		t.Error("no organization configured, yet a job was named")
	}
}

// The log's end is read from the configured API base with the server's
// token, as text from a suffix range, cleaned of terminal escapes and
// starting at a whole line; any other link reads nothing at all.
func TestTailReadsTheConfiguredOrgsJobOnly(t *testing.T) {
	bk := fakebuildkite.New(t)
	log := "\x1b_bk;t=1700000000000\x07~~~ Running tests\n" + strings.Repeat("noise line\n", 3000) +
		"\x1b[31m--- FAIL: TestAdd (0.00s)\x1b[0m\r\n    calc_test.go:7: Add(1, 1) = 3, want 2\n"
	b := bk.AddFinishedBuild("acme", "ci", "failed", log)
	other := bk.AddFinishedBuild("other", "ci", "failed", "other org's secret log\n")
	r := &buildkitelog.Reader{APIBase: bk.URL(), Org: "acme", Token: bk.Token()}
	ctx := context.Background()

	tail, err := r.Tail(ctx, fakebuildkite.JobWebURL(b), 1024)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tail, "--- FAIL: TestAdd (0.00s)\n    calc_test.go:7: Add(1, 1) = 3, want 2\n") || len(tail) > 1024 || !strings.HasPrefix(tail, "noise line\n") || strings.Contains(tail, "\x1b") {
		t.Errorf("tail %q", tail)
	}
	reqs := bk.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests %+v", reqs)
	}
	if q := reqs[0]; q.Path != "/v2/organizations/acme/pipelines/ci/builds/1/jobs/"+b.JobID+"/log" || q.Auth != "bearer" || q.Accept != "text/plain" || q.Range != "bytes=-1024" || q.Status != http.StatusPartialContent {
		t.Errorf("request %+v", q)
	}

	for _, link := range []string{
		fakebuildkite.JobWebURL(other), // another organization
		strings.Replace(fakebuildkite.JobWebURL(b), "https://buildkite.com/", "https://buildkite.example/", 1),
		strings.Replace(fakebuildkite.JobWebURL(b), "https://buildkite.com/", strings.TrimSuffix(bk.URL(), "/")+"/", 1), // the API's own host
		strings.Replace(fakebuildkite.JobWebURL(b), "https://buildkite.com/", "https://buildkite.com@"+strings.TrimPrefix(bk.URL(), "http://"), 1),
		"https://buildkite.com/other/ci/builds/1", // another organization's build
	} {
		if tail, err := r.Tail(ctx, link, 1024); tail != "" || err != nil {
			t.Errorf("%s: %q %v", link, tail, err)
		}
	}
	if n := len(bk.Requests()); n != 1 {
		t.Errorf("links that name no job of acme made %d more requests", n-1)
	}

	// A build's link (Buildkite's build-level statuses): its first failed
	// command job's log, named; a build with no failed job reads none.
	tail, err = r.Tail(ctx, "https://buildkite.com/acme/ci/builds/1", 1024)
	if err != nil || !strings.HasPrefix(tail, "(the build's first failed job: :test_tube: test)\nnoise line\n") || !strings.HasSuffix(tail, "want 2\n") {
		t.Errorf("build link: %q %v", tail, err)
	}
	reqs = bk.Requests()[1:]
	if len(reqs) != 2 || reqs[0].Path != "/v2/organizations/acme/pipelines/ci/builds/1" || reqs[0].Auth != "bearer" || reqs[1].Path != "/v2/organizations/acme/pipelines/ci/builds/1/jobs/"+b.JobID+"/log" {
		t.Errorf("build link requests %+v", reqs)
	}
	passed := bk.AddFinishedBuild("acme", "ci", "passed", "all good\n")
	if tail, err := r.Tail(ctx, strings.Split(fakebuildkite.JobWebURL(passed), "#")[0], 1024); tail != "" || err != nil {
		t.Errorf("a build without a failed job: %q %v", tail, err)
	}
	// A log shorter than the tail is read whole, its first line kept.
	short := bk.AddFinishedBuild("acme", "ci", "failed", "first line\nsecond\n")
	if tail, err := r.Tail(ctx, fakebuildkite.JobWebURL(short), 1024); tail != "first line\nsecond\n" || err != nil {
		t.Errorf("short log: %q %v", tail, err)
	}
	// An empty log (416) is no log; a missing job an error.
	empty := bk.AddFinishedBuild("acme", "ci", "failed", "")
	if tail, err := r.Tail(ctx, fakebuildkite.JobWebURL(empty), 1024); tail != "" || err != nil {
		t.Errorf("empty log: %q %v", tail, err)
	}
	gone := strings.Replace(fakebuildkite.JobWebURL(b), b.JobID, jobID, 1)
	if _, err := r.Tail(ctx, gone, 1024); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing job: %v", err)
	}
}

// A redirect is not followed: the token goes to the API base alone.
func TestTailFollowsNoRedirect(t *testing.T) {
	bk := fakebuildkite.New(t)
	b := bk.AddFinishedBuild("acme", "ci", "failed", "log\n")
	var away atomic.Int32
	srv := newRedirector(t, &away)
	r := &buildkitelog.Reader{APIBase: srv, Org: "acme", Token: "bkua_secret"}
	if _, err := r.Tail(context.Background(), fakebuildkite.JobWebURL(b), 100); err == nil || away.Load() != 0 {
		t.Errorf("err %v, %d requests followed the redirect", err, away.Load())
	}
}
