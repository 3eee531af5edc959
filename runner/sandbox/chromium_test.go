package sandbox

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// Headless Chromium (Debian's, installed by .ci/ensure-chromium) runs in the
// sandbox as a repository's verify would run it: from the host toolchain,
// with its own sandbox off (bubblewrap is the boundary), no /dev/shm use, a
// fresh profile in the sandbox's /tmp, and the fonts and launcher settings
// DefaultEtcFiles binds. The page is the repository's own file.
func TestChromiumRendersAPageFromTheWorkspaceHeadless(t *testing.T) {
	s := newSpec(t, "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=/tmp/chromium-profile", "--window-size=320,200",
		"--screenshot=/workspace/shot.png", "file:///workspace/page.html")
	s.Env = append(s.Env, "HOME=/tmp")
	page := `<!doctype html><html><body style="margin:0;background:#d00000"><h1 style="color:#fff">Inspect</h1></body></html>`
	if err := os.WriteFile(filepath.Join(s.Workspace, "page.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	res, stdout, stderr := run(t, s)
	if res.ExitCode != 0 {
		t.Fatalf("chromium exited %d (%s)\nstdout: %s\nstderr: %s", res.ExitCode, res.Signal, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(s.Workspace, "shot.png"))
	if err != nil {
		t.Fatalf("no screenshot: %v\nstderr: %s", err, stderr)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if bounds := img.Bounds(); bounds.Dx() != 320 || bounds.Dy() != 200 {
		t.Errorf("the screenshot is %v, not 320x200", bounds)
	}
	// The page's background, far from the heading: the page was rendered,
	// not a blank or an error page.
	r, g, bl, _ := img.At(300, 190).RGBA()
	if r>>8 < 0xc0 || g>>8 > 0x30 || bl>>8 > 0x30 {
		t.Errorf("the page's corner is rgb(%d,%d,%d), not its red background", r>>8, g>>8, bl>>8)
	}
}
