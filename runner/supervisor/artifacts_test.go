package supervisor

import (
	"bytes"
	"context"
	"image"
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

// A verify command's screenshots: globs collect its images as artifacts
// marked with its name, under the artifact caps with no artifacts: globs
// of their own (decision 0083): a file that is not an image by its bytes
// is refused and not uploaded, and none is ever part of the change, even
// one the agent wrote.
func TestVerifyScreenshotsAreImagesMarkedWithTheirCommand(t *testing.T) {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"fixtures/home.png": img.String(), "README": "x\n"})
	agent := []string{"sh", "-c", `echo y >> README && mkdir -p shots && cp fixtures/home.png shots/agent.png`}
	ui := command("ui", time.Minute, "sh", "-c", `mkdir -p shots && cp fixtures/home.png shots/home.png && echo 'no image' > shots/notes.png`)
	ui.Screenshots = []string{"shots/*.png"}
	spec := ch.Spec("s-shots", "a-shots", sha, agent, ui)
	spec.Artifacts = &contract.ArtifactSpec{MaxFileBytes: 4096, MaxSessionBytes: 1 << 20}
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	if u.Evidence.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s\n%+v", u.Evidence.Outcome, u.Evidence.Reason, u.Evidence.Commands)
	}
	got := map[string]contract.Artifact{}
	for _, a := range u.Evidence.Artifacts {
		got[a.Name] = a
	}
	uploaded := ch.Attempt("a-shots").Artifacts
	if a := got["shots/home.png"]; a.Screenshot != "ui" || a.Refused != "" || a.ContentType != "image/png" || !bytes.Equal(uploaded["shots/home.png"], img.Bytes()) {
		t.Errorf("the screenshot: %+v (uploaded %d bytes)", a, len(uploaded["shots/home.png"]))
	}
	if a := got["shots/notes.png"]; !strings.Contains(a.Refused, "must be a PNG, JPEG, GIF or WebP image") {
		t.Errorf("the file that is no image: %+v", a)
	}
	if _, ok := uploaded["shots/notes.png"]; ok {
		t.Error("the file that is no image was uploaded")
	}
	if u.Manifest == nil || len(u.Manifest.Files) != 1 || u.Manifest.Files[0].Path != "README" {
		t.Errorf("the change = %+v, want README alone", u.Manifest)
	}
}
