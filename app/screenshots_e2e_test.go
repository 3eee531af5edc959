package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// solidPNG is a w×h PNG of one colour.
func solidPNG(t testing.TB, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// storeAttempt records an ended attempt of the fixture's repository with
// evidence ev and the artifacts files (stored as the channel would),
// their screenshot marks listed in ev.
func storeAttempt(t *testing.T, h *harness, a store.Attempt, ev contract.Evidence, files map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	now := h.clock.Now()
	a.Deadline, a.Spec = now.Add(time.Hour), "{}"
	if a.SessionID == "" {
		// As the app records them: only an attempt without a session (the
		// baseline's) names its repository.
		a.RepoID = repoID
	}
	if err := h.st.CreateAttempt(ctx, a, "claim-"+a.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.ClaimAttempt(ctx, a.ID, "claim-"+a.ID, "token-"+a.ID, now); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := h.st.PutArtifact(ctx, store.Artifact{AttemptID: a.ID, SessionID: a.SessionID, Name: name, ContentType: "image/png",
			Size: int64(len(content)), SHA256: fmt.Sprintf("%x", content[:8]), Content: content, CreatedAt: now}, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	ev.Version, ev.AttemptID, ev.SessionID, ev.Outcome, ev.StartedAt, ev.EndedAt = contract.EvidenceVersion, a.ID, a.SessionID, contract.OutcomeOK, now, now
	result, err := json.Marshal(contract.ResultUpload{Evidence: ev})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.RecordResult(ctx, a.ID, string(result), nil, now); err != nil {
		t.Fatal(err)
	}
}

// The session page pairs each verify screenshot of the base (the
// baseline attempt the session's evidence names) with the change's, by
// command and path, side by side, each image loaded through the
// dashboard's sign-in; a side with none says so (decision 0083). The
// store is filled as the channel would fill it, both attempts' artifacts.
func TestSessionPageShowsScreenshotsBaseAndChangeSideBySide(t *testing.T) {
	d := newDashboard(t)
	ctx := context.Background()
	sess := store.Fixture(session.Done, store.Session{ID: "shots-session-1", RepoID: repoID, RepoOwner: owner, RepoName: repoName,
		InstallationID: installationID, Number: issueNumber, TriggerKind: session.KindComment, CommentID: 4242, DeliveryID: "d-shots",
		RequesterLogin: "alice", RequesterID: 5000, RequesterType: "User", Instructions: "make the button blue"})
	if _, err := d.st.Accept(ctx, store.Acceptance{DeliveryID: "d-shots", Event: "issue_comment", At: d.clock.Now(), CommentID: 4242, Session: &sess}); err != nil {
		t.Fatal(err)
	}
	mark := func(names ...string) []contract.Artifact {
		var out []contract.Artifact
		for _, n := range names {
			out = append(out, contract.Artifact{Name: n, Size: 1, ContentType: "image/png", SHA256: strings.Repeat("ab", 32), Screenshot: "ui"})
		}
		return out
	}
	red, blue := solidPNG(t, 64, 40, color.RGBA{R: 200, A: 255}), solidPNG(t, 64, 40, color.RGBA{B: 200, A: 255})
	storeAttempt(t, d.harness, store.Attempt{ID: "shots-base-1", Kind: "baseline"},
		contract.Evidence{Artifacts: mark("shots/button.png")}, map[string][]byte{"shots/button.png": red})
	storeAttempt(t, d.harness, store.Attempt{ID: "shots-change-1", SessionID: sess.ID},
		contract.Evidence{Artifacts: mark("shots/button.png", "shots/new.png"), Baseline: &contract.BaselineComparison{AttemptID: "shots-base-1"}},
		map[string][]byte{"shots/button.png": blue, "shots/new.png": blue})

	d.signIn("alice", "/sessions/"+sess.ID)
	pair := "#" + screenshots.Anchor("ui", "shots/button.png")
	d.do("the screenshots", chromedp.WaitVisible(chromedp.CSS(pair)))
	// Both images loaded (the browser decoded what the dashboard served),
	// the base's left of the change's on one row.
	loaded := fmt.Sprintf(`(() => {
  const b = document.querySelector(%[1]q + " .base img"), c = document.querySelector(%[1]q + " .change img");
  if (!b || !c || !b.complete || !c.complete) return "";
  const rb = b.getBoundingClientRect(), rc = c.getBoundingClientRect();
  return [b.naturalWidth, c.naturalWidth, Math.round(rb.top) === Math.round(rc.top), rb.right <= rc.left].join(",");
})()`, pair)
	pollCtx, cancel := context.WithTimeout(d.tab, 30*time.Second)
	defer cancel()
	got, err := chromedp.Run(pollCtx, chromedp.Poll[string](loaded, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the pair's images did not load: %v\n%s", err, d.logs)
	}
	if got != "64,64,true,true" {
		t.Errorf("the pair (base width, change width, one row, base first) = %q, want 64,64,true,true", got)
	}
	other := "#" + screenshots.Anchor("ui", "shots/new.png")
	if s := d.text(other + " .base"); !strings.Contains(s, "The base has no such screenshot.") {
		t.Errorf("the pair with no base says %q", s)
	}
	d.screenshot("session-screenshots")
}

// putArtifact uploads one artifact over the session channel, as the
// supervisor's collectArtifacts does.
func (sv *supervisor) putArtifact(name string, content []byte) {
	sv.t.Helper()
	req, err := http.NewRequest(http.MethodPut, sv.base+contract.AttemptPath(contract.PathArtifact, sv.id)+"?name="+url.QueryEscape(name), bytes.NewReader(content))
	if err != nil {
		sv.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(contract.HeaderSessionToken, sv.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		sv.t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != http.StatusNoContent {
		sv.t.Fatalf("PUT artifact %s: status %d", name, resp.StatusCode)
	}
}

// The PR lists a session's screenshots as links to the session page's
// pairs (decision 0083), from a repository config whose verify step names
// them and no artifacts: section. With web.public_screenshot_thumbnails,
// a public repository's PR shows each image small from a content-addressed
// URL that serves exactly its bytes without sign-in; a private one's PR
// has no image URL, and the digest's URL answers 404.
func TestPRListsScreenshotsAndOnlyAPublicRepositoryGetsThumbnails(t *testing.T) {
	for _, private := range []bool{false, true} {
		t.Run(map[bool]string{false: "public", true: "private"}[private], func(t *testing.T) {
			var ex *scriptedExecutor
			d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
				opts = append(opts, func(c *configServer) { c.Web.PublicScreenshotThumbnails = true })
				h, x := newSessionHarness(t, opts...)
				ex = x
				return h
			})
			d.gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID,
				OwnerType: "User", Private: private, OwnerPlan: fakegithub.PlanTeam})
			d.gh.CommitFiles(owner, repoName, "main", map[string]string{".github/inspect.yml": agentConfig + "    screenshots: [\"shots/*.png\"]\n"}, "screenshots")
			if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect make the button blue"})); code != 200 {
				t.Fatal(code)
			}
			d.runWorkers()
			sv := d.claim(ex.last(t))
			spec := sv.spec()
			if len(spec.Verify) != 1 || len(spec.Verify[0].Screenshots) != 1 || spec.Artifacts == nil || len(spec.Artifacts.Patterns) != 0 {
				t.Fatalf("the spec's verify %+v and artifacts %+v", spec.Verify, spec.Artifacts)
			}
			shot := solidPNG(t, 32, 20, color.RGBA{B: 200, A: 255})
			sv.putArtifact("shots/button.png", shot)
			now := d.clock.Now()
			ev := contract.Evidence{
				Version: contract.EvidenceVersion, SessionID: spec.SessionID, AttemptID: spec.AttemptID, PinnedSHA: spec.PinnedSHA,
				StartedAt: now, EndedAt: now.Add(time.Minute), Outcome: contract.OutcomeOK,
				Commands: []contract.CommandResult{{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, DurationMS: 1200}},
				Artifacts: []contract.Artifact{{Name: "shots/button.png", Size: int64(len(shot)), ContentType: "image/png",
					SHA256: fmt.Sprintf("%x", sha256.Sum256(shot)), Screenshot: spec.Verify[0].Name}},
			}
			m := &contract.Manifest{Version: contract.ManifestVersion, BaseSHA: spec.PinnedSHA, Files: []contract.FileChange{
				{Path: "calc.go", Mode: contract.ModeFile, Content: []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n")}}}
			sv.call("PUT", contract.PathResult, contract.ResultUpload{Evidence: ev, Manifest: m}, nil, 204)
			d.runWorkers()
			sess := d.onlySession()
			if sess.Outcome != session.Changed {
				t.Fatalf("session = %s/%s: %s\n%s", sess.State(), sess.Outcome, sess.Detail, d.logs)
			}
			pr, _, err := d.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
			if err != nil {
				t.Fatal(err)
			}
			body := pr.GetBody()
			link := fmt.Sprintf("[`unit tests`: `shots/button.png`](%s/sessions/%s#%s) (change only)", d.url, sess.ID, screenshots.Anchor("unit tests", "shots/button.png"))
			if !strings.Contains(body, "**Screenshots**") || !strings.Contains(body, link) {
				t.Errorf("the PR body lacks the screenshot's link %s:\n%s", link, body)
			}
			content := fmt.Sprintf("%s/screenshots/sha256-%x.png", d.url, sha256.Sum256(shot))
			resp, err := http.Get(content)
			if err != nil {
				t.Fatal(err)
			}
			served, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close() // read whole
			if err != nil {
				t.Fatal(err)
			}
			if private {
				if strings.Contains(body, "<img") || strings.Contains(body, "/screenshots/") {
					t.Errorf("a private repository's PR body has an image URL:\n%s", body)
				}
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("a private repository's screenshot at its digest: status %d, want 404", resp.StatusCode)
				}
				return
			}
			if !strings.Contains(body, `<img src="`+content+`" alt="change" width="240">`) {
				t.Errorf("a public repository's PR body lacks the thumbnail %s:\n%s", content, body)
			}
			if resp.StatusCode != http.StatusOK || !bytes.Equal(served, shot) || resp.Header.Get("Content-Type") != "image/png" ||
				!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
				t.Errorf("the content URL answered %d, %s, %q with %d bytes; want exactly the screenshot's %d", resp.StatusCode,
					resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), len(served), len(shot))
			}
		})
	}
}
