package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
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
	a.RepoID, a.Deadline, a.Spec = repoID, now.Add(time.Hour), "{}"
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
