// Package browsertest starts Debian's Chromium (/usr/bin/chromium,
// installed by .ci/ensure-chromium) headless for tests that look at pages
// as a person would, through chromedp. One browser serves a whole test
// binary (each test gets a tab in a browser context of its own, with its
// own cookies), and it never downloads a browser. Tests only.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path is Debian's Chromium.
const Path = "/usr/bin/chromium"

var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
	err    error
}

// flags are the probe's, for a machine with no network: without the
// background-networking ones Chromium keeps trying to reach Google.
func flags(userDataDir string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path),
		chromedp.NoSandbox, // CI runs as root, and the pages are the test's own
		chromedp.DisableGPU,
		chromedp.UserDataDir(userDataDir),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
	)
}

// Tab is a new tab in the test binary's browser, closed at the test's
// end. A test fails at once when Chromium is missing.
func Tab(t testing.TB) context.Context {
	t.Helper()
	if _, err := exec.LookPath(Path); err != nil {
		t.Fatalf("browsertest: %s is needed (run .ci/ensure-chromium): %v", Path, err)
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "browsertest-")
		if shared.err != nil {
			return
		}
		actx, cancelA := chromedp.NewExecAllocator(context.Background(), flags(shared.dir)...)
		bctx, cancelB := chromedp.NewContext(actx)
		// The first action starts the browser.
		if shared.err = chromedp.Do(bctx); shared.err != nil {
			cancelB()
			cancelA()
			return
		}
		shared.ctx = bctx
		shared.cancel = func() { cancelB(); cancelA() }
	})
	if shared.err != nil {
		t.Fatalf("browsertest: starting Chromium: %v", shared.err)
	}
	// A browser context of its own: the tab shares no cookies with an
	// earlier test's.
	tab, cancel := chromedp.NewContext(shared.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("browsertest: a new tab: %v", err)
	}
	return tab
}

// Close stops the browser and removes its profile. Defer it in TestMain,
// after the tests have run.
func Close() {
	if shared.cancel != nil {
		shared.cancel()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir) // best effort: a temp dir
	}
}
