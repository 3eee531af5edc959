package supervisor

import (
	"bytes"
	"context"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// Verify opens the repository's page in headless Chromium (the host's,
// .ci/ensure-chromium) and saves a screenshot: the PNG is uploaded as the
// session's artifact, typed by its bytes, listed in the evidence, and not
// in the change, while the agent's own edit is. Files over a cap, and a
// symlink, are listed refused and never read.
func TestVerifyScreenshotIsAnArtifactAndNotTheChange(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		"web/index.html": `<!doctype html><html><body style="margin:0;background:#d00000"><h1>old</h1></body></html>`,
	})
	agent := []string{"sh", "-c", `sed -i 's/old/new/' web/index.html && mkdir -p screenshots && echo "agent's note" > screenshots/agent.txt`}
	// Verify runs on the pinned commit plus the change (decision 0023),
	// which leaves the agent's screenshots/ out: verify makes its own.
	spec := ch.Spec("s-art", "a-art", sha, agent,
		command("dirs", time.Minute, "mkdir", "-p", "screenshots"),
		command("screenshot", 2*time.Minute, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=/tmp/chromium", "--window-size=320,200", "--screenshot=/workspace/screenshots/home.png", "file:///workspace/web/index.html"),
		command("more", time.Minute, "sh", "-c", `head -c 5000 /dev/zero > screenshots/huge.bin && ln -s /etc/passwd screenshots/link.png && mkdir -p reports/run1 && printf 'a,b\n1,2\n' > reports/run1/out.csv`))
	spec.Artifacts = &contract.ArtifactSpec{Patterns: []string{"screenshots/*", "reports/**"}, MaxFileBytes: 4096, MaxSessionBytes: 1 << 20}
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	got := map[string]contract.Artifact{}
	for _, a := range u.Evidence.Artifacts {
		got[a.Name] = a
	}
	uploaded := ch.Attempt("a-art").Artifacts
	home := got["screenshots/home.png"]
	if home.Refused != "" || home.ContentType != "image/png" || home.Size != int64(len(uploaded["screenshots/home.png"])) || len(home.SHA256) != 64 {
		t.Errorf("the screenshot's entry: %+v (uploaded %d bytes)", home, len(uploaded["screenshots/home.png"]))
	}
	if _, err := png.Decode(bytes.NewReader(uploaded["screenshots/home.png"])); err != nil {
		t.Errorf("the uploaded screenshot is not a PNG: %v", err)
	}
	if a := got["reports/run1/out.csv"]; a.Refused != "" || !strings.HasPrefix(a.ContentType, "text/plain") {
		t.Errorf("the report's entry: %+v", a)
	}
	if a := got["screenshots/huge.bin"]; !strings.Contains(a.Refused, "4096-byte limit per file") || a.Size != 5000 {
		t.Errorf("the file over the cap: %+v", a)
	}
	if a := got["screenshots/link.png"]; a.Refused != "not a regular file" {
		t.Errorf("the symlink: %+v", a)
	}
	for _, name := range []string{"screenshots/huge.bin", "screenshots/link.png"} {
		if _, ok := uploaded[name]; ok {
			t.Errorf("%s was uploaded", name)
		}
	}
	if u.Manifest == nil {
		t.Fatal("no change")
	}
	var paths []string
	for _, f := range u.Manifest.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, ",") != "web/index.html" {
		t.Errorf("the change holds %v; only web/index.html is the agent's change", paths)
	}
}
