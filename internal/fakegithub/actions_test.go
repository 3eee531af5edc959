package fakegithub

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func TestJobLogs(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	gh := appInstallClient(t, s, 1)
	job := s.AddForeignCheckRun("acme", "widgets", CheckRun{
		AppSlug: "github-actions", AppID: 15368, Name: "test", HeadSHA: "0123456789abcdef0123456789abcdef01234567", Conclusion: "failure",
	})
	const log = "2024-01-01T00:00:00Z ##[group]Run go test\n--- FAIL: TestX\n"
	s.SetJobLog("acme", "widgets", job.ID, log)

	u, resp, err := gh.Actions.GetWorkflowJobLogs(ctx, "acme", "widgets", job.ID, 0)
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("logs: %v %v", resp, err)
	}
	if !strings.HasPrefix(u.String(), s.URL()+"/") || strings.Contains(u.Path, "/api/v3/") {
		t.Errorf("download URL = %s", u)
	}
	get := func(url string, auth string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	// No credential is needed, and a stale one does no harm.
	for _, auth := range []string{"", "token ghs_not_a_token"} {
		if status, typ, body := get(u.String(), auth); status != http.StatusOK || body != log || !strings.HasPrefix(typ, "text/plain") {
			t.Errorf("download (auth %q): %d %q %q", auth, status, typ, body)
		}
	}
	if rs := s.RequestsMatching("GET", u.Path); len(rs) != 2 || rs[0].Status != http.StatusOK || rs[0].Auth != "none" {
		t.Errorf("recorded downloads = %+v", rs)
	}
	// The URL expires after a minute; a new one can be asked for.
	s.SetClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
	if status, _, _ := get(u.String(), ""); status != http.StatusForbidden {
		t.Errorf("expired download: %d", status)
	}
	s.SetClock(time.Now)
	if status, _, _ := get(s.URL()+logDownloadPrefix+"nope", ""); status != http.StatusNotFound {
		t.Errorf("unknown download: %d", status)
	}

	// A job without a log, and a repo the installation cannot see.
	_, resp, err = gh.Actions.GetWorkflowJobLogs(ctx, "acme", "widgets", job.ID+1000, 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("no log: %v %v", resp, err)
	}
	_, resp, err = gh.Actions.GetWorkflowJobLogs(ctx, "other", "thing", job.ID, 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("other installation: %v %v", resp, err)
	}
	// The endpoint itself needs a credential and "actions: read".
	if status, msg := rawGet(t, s.APIURL()+"repos/acme/widgets/actions/jobs/1/logs", ""); status != http.StatusUnauthorized {
		t.Errorf("unauthenticated: %d %s", status, msg)
	}
	ro := installClient(t, s, 1, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	_, resp, err = ro.Actions.GetWorkflowJobLogs(ctx, "acme", "widgets", job.ID, 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("without actions permission: %v %v", resp, err)
	}
}
