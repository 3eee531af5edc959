package fakegithub

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

func TestTokenLifetime(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	start := time.Now().Truncate(time.Second)

	// The default is GitHub's hour.
	fixedClock(s, start)
	app := jwtClientAt(t, s, start)
	tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.GetExpiresAt().Time; !got.Equal(start.Add(time.Hour)) {
		t.Errorf("default expires_at = %v, want %v", got, start.Add(time.Hour))
	}

	s.SetTokenLifetime(2 * time.Second)
	cases := []struct {
		name       string
		mintedAt   time.Time
		wantExpiry time.Time
	}{
		{"on a whole second", start, start.Add(2 * time.Second)},
		// Rounded up, not down: truncating would leave 1.5 s of a 2 s
		// token.
		{"mid-second", start.Add(500 * time.Millisecond), start.Add(3 * time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fixedClock(s, tc.mintedAt)
			tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.GetExpiresAt().Time; !got.Equal(tc.wantExpiry) {
				t.Errorf("expires_at = %v, want %v", got, tc.wantExpiry)
			}
			gh := tokenClient(t, s, tok.GetToken())
			// Good for at least its whole lifetime, up to the instant it
			// expires.
			for _, at := range []time.Time{tc.mintedAt.Add(2*time.Second - time.Millisecond), tc.wantExpiry.Add(-time.Millisecond)} {
				fixedClock(s, at)
				if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
					t.Fatalf("at %v: %v", at.Sub(tc.mintedAt), err)
				}
			}
			fixedClock(s, tc.wantExpiry)
			_, _, err = gh.Repositories.Get(ctx, "acme", "widgets")
			if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "Bad credentials" {
				t.Errorf("message = %q", er.Message)
			}
		})
	}
}

func TestSuspendedInstallation(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	at := time.Now().Truncate(time.Second)
	fixedClock(s, at)
	app := jwtClientAt(t, s, at)

	tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := app.Apps.CreateInstallationToken(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.SuspendInstallation(1)

	_, _, err = app.Apps.CreateInstallationToken(ctx, 1, nil)
	if er := wantStatus(t, err, http.StatusForbidden); er.Message != "This installation has been suspended" {
		t.Errorf("mint message = %q", er.Message)
	}
	_, _, err = tokenClient(t, s, tok.GetToken()).Repositories.Get(ctx, "acme", "widgets")
	if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "Bad credentials" {
		t.Errorf("old token message = %q", er.Message)
	}
	in, _, err := app.Apps.GetInstallation(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !in.GetSuspendedAt().Time.Equal(at) {
		t.Errorf("suspended_at = %v, want %v", in.SuspendedAt, at)
	}

	// The other installation is untouched.
	if _, _, err := tokenClient(t, s, other.GetToken()).Repositories.Get(ctx, "other", "thing"); err != nil {
		t.Errorf("installation 2's token: %v", err)
	}
	in2, _, err := app.Apps.GetInstallation(ctx, 2)
	if err != nil || in2.SuspendedAt != nil {
		t.Errorf("installation 2 = %v, %v", in2, err)
	}

	// Revoking an installation's tokens kills them, and new ones may be
	// minted.
	s.RevokeInstallationTokens(2)
	_, _, err = tokenClient(t, s, other.GetToken()).Repositories.Get(ctx, "other", "thing")
	wantStatus(t, err, http.StatusUnauthorized)
	fresh, _, err := app.Apps.CreateInstallationToken(ctx, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tokenClient(t, s, fresh.GetToken()).Repositories.Get(ctx, "other", "thing"); err != nil {
		t.Errorf("fresh token: %v", err)
	}
}

func TestIsContentCreating(t *testing.T) {
	cases := []struct {
		method, path string
		want         bool
	}{
		{"POST", "/repos/acme/widgets/issues/1/comments", true},
		{"PATCH", "/repos/acme/widgets/issues/1", true},
		{"PUT", "/repos/acme/widgets/contents/a.txt", true},
		{"DELETE", "/repos/acme/widgets/issues/1/labels/bug", true},
		{"POST", "/app/hook/deliveries/5/attempts", true},
		{"GET", "/repos/acme/widgets", false},
		{"HEAD", "/repos/acme/widgets", false},
		{"POST", "/app/installations/1/access_tokens", false},
		{"POST", "/acme/widgets.git/git-receive-pack", false},
		{"POST", "/acme/widgets.git/git-upload-pack", false},
	}
	for _, tc := range cases {
		if got := IsContentCreating(Request{Method: tc.method, Path: tc.path}); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestRequestTimesAndBusiestWindow(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	t0 := time.Now().Truncate(time.Second)
	fixedClock(s, t0)
	app := jwtClientAt(t, s, t0)
	tok, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	gh := tokenClient(t, s, tok.GetToken())
	comment := func(at time.Duration) {
		t.Helper()
		fixedClock(s, t0.Add(at))
		if _, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", 1, &github.IssueComment{Body: github.String("x")}); err != nil {
			t.Fatal(err)
		}
	}
	comment(0)
	if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatal(err)
	}
	comment(10 * time.Second)
	comment(30 * time.Second)
	comment(60 * time.Second) // a minute after the first: not in its window
	comment(75 * time.Second)
	// A token minted among them does not count.
	fixedClock(s, t0.Add(66*time.Second))
	if _, _, err := jwtClientAt(t, s, t0.Add(66*time.Second)).Apps.CreateInstallationToken(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	// git and job log downloads are stamped too.
	for _, p := range []string{"/acme/widgets.git/info/refs?service=git-upload-pack", logDownloadPrefix + "nope"} {
		resp, err := http.Get(s.URL() + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	reqs := s.Requests()
	if reqs[1].Method != "POST" || !reqs[1].At.Equal(t0) {
		t.Errorf("first comment = %s %s at %v, want %v", reqs[1].Method, reqs[1].Path, reqs[1].At, t0)
	}
	for _, r := range reqs {
		if r.At.IsZero() {
			t.Errorf("%s %s has no arrival time", r.Method, r.Path)
		}
	}
	// Any minute holds three comments at most; the token minted at
	// t+66s would make four of t+10s..t+66s.
	if got := len(s.BusiestWindow(IsContentCreating, time.Minute)); got != 3 {
		t.Errorf("content-creating per minute = %d, want 3", got)
	}
	// Closing the window at one end would put t and t+60s together.
	if got := len(s.BusiestWindow(IsContentCreating, time.Minute+time.Nanosecond)); got != 4 {
		t.Errorf("content-creating per minute and a nanosecond = %d, want 4", got)
	}
	if got := len(s.BusiestWindow(IsContentCreating, time.Second)); got != 1 {
		t.Errorf("content-creating per second = %d, want 1", got)
	}
	if got := len(s.BusiestWindow(nil, time.Hour)); got != len(reqs) {
		t.Errorf("all requests in an hour = %d, want %d", got, len(reqs))
	}
	isGet := func(r Request) bool { return r.Method == "GET" }
	// The repo GET at t0, and the git and log GETs at t0+66s.
	if got := len(s.BusiestWindow(isGet, time.Minute)); got != 2 {
		t.Errorf("GETs per minute = %d, want 2", got)
	}
}
