package app_test

import (
	"bytes"
	"context"
	"image/png"
	"os/exec"
	"strings"
	"testing"
)

// The issue-16 acceptance for a browser and artifacts, end to end on the
// local executor: verify opens the repository's page in headless Chromium
// (the host's, .ci/ensure-chromium) and saves a PNG; the app stores it
// (typed by its bytes), lists it in the PR by name and size, and it is not
// in the commit, while the agent's edit of the page is.
func TestVerifyScreenshotIsStoredListedInThePRAndNotCommitted(t *testing.T) {
	h, lx := newSandboxHarness(t)
	files := map[string]string{
		"web/index.html": `<!doctype html><html><body style="margin:0;background:#d00000"><h1>old</h1></body></html>`,
		".github/inspect.yml": `agent:
  preset: command
  command: ["sh", "-c", "sed -i s/old/new/ web/index.html"]
verify:
  - name: screenshot
    run: [chromium, --headless, --no-sandbox, --disable-gpu, --disable-dev-shm-usage, --no-first-run,
          --disable-background-networking, --disable-component-update, --disable-sync, --user-data-dir=/tmp/chromium,
          "--window-size=320,200", --screenshot=/workspace/screenshots/home.png, file:///workspace/web/index.html]
artifacts: ["screenshots/*.png"]
`,
	}
	// Chromium writes the file, not its directory.
	files["screenshots/.keep"] = "\n"
	sess := h.runSession(lx, files, "/inspect make the heading say new")

	stored, err := h.st.Artifacts(context.Background(), sess.AttemptID)
	if err != nil || len(stored) != 1 || stored[0].Name != "screenshots/home.png" || stored[0].ContentType != "image/png" {
		t.Fatalf("stored artifacts: %+v, %v\n%s", stored, err, h.logs)
	}
	got, err := h.st.ArtifactContent(context.Background(), sess.AttemptID, "screenshots/home.png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(got.Content))
	if err != nil || img.Bounds().Dx() != 320 {
		t.Fatalf("the stored screenshot: %v", err)
	}
	pr, _, err := h.client(t).PullRequests.Get(context.Background(), owner, repoName, sess.PRNumber)
	if err != nil {
		t.Fatal(err)
	}
	body := pr.GetBody()
	for _, want := range []string{"## Artifacts", "`screenshots/home.png`", "`image/png`"} {
		if !strings.Contains(body, want) {
			t.Errorf("the PR body lacks %q:\n%s", want, body)
		}
	}
	tree, err := exec.Command("git", "--git-dir", h.gh.GitDir(owner, repoName), "ls-tree", "-r", "--name-only", sess.CommitSHA).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tree), "screenshots/home.png") {
		t.Errorf("the screenshot is in the commit:\n%s", tree)
	}
	page, err := exec.Command("git", "--git-dir", h.gh.GitDir(owner, repoName), "show", sess.CommitSHA+":web/index.html").Output()
	if err != nil || !strings.Contains(string(page), "new") {
		t.Errorf("the agent's edit is not in the commit: %s (%v)", page, err)
	}
}
