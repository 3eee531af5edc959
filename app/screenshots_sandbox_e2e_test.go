package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/app/screenshots"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

// widgetRepo is a repository of its own for the screenshots' end-to-end
// test (the shared sample repository is not changed): a Go module whose
// widget is red on the base, while its test wants it blue, and whose
// other test draws the widget, with the standard library, into
// shots/widget.png, a screenshot of the verify step. The stand-in agent
// makes the widget blue, so base and change draw different images.
var widgetRepo = map[string]string{
	"go.mod": "module example.com/widget\n\ngo 1.22\n",
	"widget.go": `package widget

import "image/color"

// Colour is the widget's colour.
func Colour() color.RGBA { return color.RGBA{R: 200, A: 255} }
`,
	"widget_test.go": `package widget

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"testing"
)

func TestWidgetIsBlue(t *testing.T) {
	if c := Colour(); c != (color.RGBA{B: 200, A: 255}) {
		t.Fatalf("the widget is %v, want blue", c)
	}
}

func TestWidgetScreenshot(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 48, 32))
	for y := range 32 {
		for x := range 48 {
			img.Set(x, y, Colour())
		}
	}
	if err := os.MkdirAll("shots", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create("shots/widget.png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}
`,
	".github/inspect.yaml": `agent:
  preset: command
  command: ["sed", "-i", "s/R: 200/B: 200/", "widget.go"]
verify:
  - name: widget tests
    run: ["go", "test", "-json", "./..."]
    timeout: 5m
    screenshots: ["shots/*.png"]
`,
}

// The issue-37 acceptance for the base comparison and its screenshots,
// through the real sandbox, in one session: the base's verify runs beside
// the change's (decision 0080), TestWidgetIsBlue fails there and passes
// with the change, and both runs draw shots/widget.png, red on the base
// and blue with the change. The PR body and the check run say the test
// was fixed and where the base ran; the private repository's PR links the
// pair on the session page, without an image URL; the baseline attempt
// keeps its image as a screenshot, and the signed-in page pairs it with
// the change's, each served with the bytes its run wrote (decision 0083).
func TestRealBaseAndChangeScreenshotsArePairedOnThePage(t *testing.T) {
	var lx *local.Executor
	d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
		// Thumbnails on, so that their absence says the repository's
		// privacy kept the images off GitHub.
		opts = append(opts, withBaselines, func(c *configServer) { c.Web.PublicScreenshotThumbnails = true })
		lx = newLocalExecutor(t)
		h := newHarness(t, opts...)
		h.runOn(lx)
		return h
	})
	d.gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID,
		OwnerType: "User", Private: true, OwnerPlan: fakegithub.PlanTeam})
	d.gh.CommitFiles(owner, repoName, "main", widgetRepo, "the widget repository")
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect make the widget blue"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()
	ctx := context.Background()
	sess := d.onlySession()
	a, err := d.st.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.BaselineDigest == "" {
		t.Fatalf("the session's attempt links no baseline: %+v, %v\n%s", a, err, d.logs)
	}
	b, err := d.st.GetBaseline(ctx, a.BaselineDigest)
	if err != nil {
		t.Fatal(err)
	}
	base, err := d.st.GetAttempt(ctx, b.AttemptID)
	if err != nil || base.ExternalID == "" {
		t.Fatalf("the baseline did not start: %+v, %v\n%s", base, err, d.logs)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if st, err := lx.Wait(wctx, base.ExternalID); err != nil || st.ExitCode != 0 {
		t.Fatalf("the baseline's inspect runner: %+v %v\n%s", st, err, d.logs)
	}
	d.waitForAttempt(lx)
	d.runWorkers()
	sess = d.onlySession()
	if sess.Outcome != session.Changed {
		t.Fatalf("session = %s/%s: %s\nevidence: %+v\n%s", sess.State(), sess.Outcome, sess.Detail, storedEvidence(t, d.harness, sess.AttemptID), d.logs)
	}

	// (1) The PR body: the section, the fixed test, where the base ran,
	// and the pair's link to the page.
	ev := storedEvidence(t, d.harness, sess.AttemptID)
	if ev.Baseline == nil || ev.Baseline.Status != contract.BaselineCompared || ev.Baseline.AttemptID != base.ID || ev.Baseline.Counts.Fixed != 1 {
		t.Fatalf("the comparison = %+v\n%s", ev.Baseline, d.logs)
	}
	pr, _, err := d.client(t).PullRequests.Get(ctx, owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	if ev.Baseline.BaseSHA == "" || ev.Baseline.BaseSHA != ev.PinnedSHA {
		t.Errorf("the base's verify ran on %q, want the pinned commit %q", ev.Baseline.BaseSHA, ev.PinnedSHA)
	}
	where := fmt.Sprintf("Verify ran on the base (`%.7s`) in attempt `%s`. There: `widget tests` exit 1.", ev.PinnedSHA, base.ID)
	fixed := fixedRow(ev.Baseline, "TestWidgetIsBlue")
	for _, want := range []string{"## Against the base", where, "1 fixed, 0 still failing, 0 newly failing", fixed} {
		if !strings.Contains(body, want) {
			t.Errorf("the PR body lacks %q:\n%s", want, body)
		}
	}
	anchor := screenshots.Anchor("widget tests", "shots/widget.png")
	link := fmt.Sprintf("[`widget tests`: `shots/widget.png`](%s/sessions/%s#%s) (base and change)", d.url, sess.ID, anchor)
	if !strings.Contains(body, "**Screenshots**") || !strings.Contains(body, link) {
		t.Errorf("the PR body lacks the pair's link %s:\n%s", link, body)
	}
	if strings.Contains(body, "<img") || strings.Contains(body, "/screenshots/") || strings.Contains(body, "/artifacts/") {
		t.Errorf("a private repository's PR body has an image URL:\n%s", body)
	}

	// The screenshot is verify's, never part of the change.
	tree, err := exec.Command("git", "--git-dir", d.gh.GitDir(owner, repoName), "ls-tree", "-r", "--name-only", sess.CommitSHA).Output()
	if err != nil || !strings.Contains(string(tree), "widget.go") || strings.Contains(string(tree), "shots/") {
		t.Errorf("the commit's files: %s (%v)", tree, err)
	}

	// (2) The check run: success, and the same section.
	runs := d.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 || runs[0].HeadSHA != sess.CommitSHA || runs[0].Conclusion != "success" {
		t.Fatalf("check runs = %+v", runs)
	}
	for _, want := range []string{"## Against the base", where, fixed} {
		if !strings.Contains(runs[0].Summary, want) {
			t.Errorf("the check run's summary lacks %q:\n%s", want, runs[0].Summary)
		}
	}

	// (3) The baseline attempt kept its image as a screenshot, red; the
	// change's is blue.
	bev := storedEvidence(t, d.harness, base.ID)
	baseShot, changeShot := screenshotOf(bev, "shots/widget.png"), screenshotOf(ev, "shots/widget.png")
	if baseShot == nil || baseShot.Screenshot != "widget tests" || baseShot.ContentType != "image/png" {
		t.Fatalf("the base's evidence lists %+v, want shots/widget.png a screenshot of `widget tests`\n%s", bev.Artifacts, d.logs)
	}
	if changeShot == nil || changeShot.Screenshot != "widget tests" {
		t.Fatalf("the change's evidence lists %+v", ev.Artifacts)
	}
	stored, err := d.st.ArtifactContent(ctx, base.ID, "shots/widget.png")
	if err != nil {
		t.Fatalf("the baseline attempt's stored shots/widget.png: %v\n%s", err, d.logs)
	}
	wantBase, wantChange := color.RGBA{R: 200, A: 255}, color.RGBA{B: 200, A: 255}
	checkShot(t, "the base's stored image", stored.Content, baseShot.SHA256, wantBase)

	// The page, signed in: the pair, and each image as served.
	d.signIn("alice", "/sessions/"+sess.ID)
	d.do("the screenshots", chromedp.WaitVisible(chromedp.CSS("#"+anchor)))
	srcs, err := chromedp.Run(d.tab, chromedp.Evaluate[[]string](fmt.Sprintf(
		`[...document.querySelectorAll(%[1]q)].map(i => i.getAttribute("src")).concat([...document.querySelectorAll(%[2]q)].map(i => i.getAttribute("src")))`,
		"#"+anchor+" .base img", "#"+anchor+" .change img")))
	if err != nil || len(srcs) != 2 {
		t.Fatalf("the pair's images (base, change) = %q, %v\npage: %s", srcs, err, d.html())
	}
	got, err := chromedp.Call(d.tab, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func(path string) []byte {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, d.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		content, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("GET %s: %d %s, %v", path, resp.StatusCode, resp.Header.Get("Content-Type"), err)
		}
		return content
	}
	if want := "/sessions/" + sess.ID + "/base/artifacts/shots/widget.png"; srcs[0] != want {
		t.Errorf("the base's image is %q, want %q", srcs[0], want)
	}
	servedBase, servedChange := fetch(srcs[0]), fetch(srcs[1])
	checkShot(t, "the base's image as served", servedBase, baseShot.SHA256, wantBase)
	checkShot(t, "the change's image as served", servedChange, changeShot.SHA256, wantChange)
	if bytes.Equal(servedBase, servedChange) {
		t.Error("the base's and the change's images are the same bytes")
	}
}

// fixedRow is the comparison's table row of the test named like name on
// the PR body and the check run (the row says it was fixed).
func fixedRow(b *contract.BaselineComparison, name string) string {
	for _, t := range b.Tests {
		if strings.HasSuffix(t.Name, name) {
			return fmt.Sprintf("| `%s` | ❌ failed | ✅ passed | fixed |", t.Name)
		}
	}
	return "no test named " + name + " in the comparison"
}

// screenshotOf is the evidence's artifact named name, nil without one.
func screenshotOf(ev contract.Evidence, name string) *contract.Artifact {
	for i := range ev.Artifacts {
		if ev.Artifacts[i].Name == name {
			return &ev.Artifacts[i]
		}
	}
	return nil
}

// checkShot checks that content is the PNG whose digest the run's
// evidence gave (the bytes its run wrote), all of colour c.
func checkShot(t *testing.T, what string, content []byte, digest string, c color.RGBA) {
	t.Helper()
	if sum := sha256.Sum256(content); hex.EncodeToString(sum[:]) != digest {
		t.Errorf("%s is not the bytes its run wrote (sha256 %x, the evidence's %s)", what, sum, digest)
	}
	img, err := png.Decode(bytes.NewReader(content))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := color.RGBAModel.Convert(img.At(1, 1)); got != c || img.Bounds().Dx() != 48 {
		t.Errorf("%s is %v, %d wide; want %v, 48 wide", what, got, img.Bounds().Dx(), c)
	}
}
