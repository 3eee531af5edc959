package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/runner/local"
)

// egressSnapshotConfig is goDepsRepo's config with a snapshot whose setup
// downloads the module through the registry egress, then asks a registry
// the server does not have for another: the egress refuses that (403), go
// fails, and setup goes on (the snapshot is still built).
const egressSnapshotConfig = "agent:\n" +
	"  preset: command\n" +
	"  command: [\"sh\", \"scripts/inspect-stand-in-agent.sh\"]\n" +
	"env:\n  GOTOOLCHAIN: local\n  GOFLAGS: -mod=readonly\n  GOMODCACHE: /cache/go/mod\n" +
	"snapshot:\n" +
	"  setup:\n" +
	"    - {name: modules, run: [go, mod, download]}\n" +
	"    - name: elsewhere\n" +
	"      run: [sh, -c, 'GOPROXY=\"${GOPROXY%goproxy/}elsewhere/\" go mod download fake.test/beta@v1.0.0 || true']\n" +
	"  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n" +
	"verify: []\n"

// A snapshot build's egress is recorded as a session's is (the README:
// every egress request is refused or recorded): the registry requests its
// setup made through the app, and the one the egress refused, are kept
// with the build on the repo's schedule and shown on the snapshots page,
// the refusal in sight and the requests a click away.
func TestSnapshotBuildEgressIsStoredAndOnTheSnapshotsPage(t *testing.T) {
	up, alpha, token, egress := goRegistry(t)
	var lx *local.Executor
	d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
		h, x := newSandboxHarness(t, append(opts, egress)...)
		lx = x
		return h
	})
	d.stop()
	d.snapshotExec = lx
	d.start()
	files := goDepsRepo(up, alpha)
	files[".github/inspect.yml"] = egressSnapshotConfig
	d.pushToMain(repoName, 0, files)
	sr := d.buildSnapshot(lx, repoID)

	// The stored build record.
	a := sr.LastEgress
	if a == nil {
		t.Fatalf("the build's record has no egress audit: %+v\n%s", sr, sr.LastLog)
	}
	var zip *contract.EgressRecord
	for i, r := range a.Records {
		if r.Kind != contract.EgressRegistry || r.Phase != contract.PhaseSetup || r.Upstream != "goproxy" || r.Method != "GET" {
			t.Errorf("record %d is not a setup GET of goproxy's: %+v", i, r)
		}
		if r.Path == "fake.test/alpha/@v/v1.0.0.zip" {
			zip = &a.Records[i]
		}
	}
	if zip == nil || zip.Status != 200 || zip.Bytes == 0 || a.Registry.Requests != len(a.Records) || a.Registry.Requests < 2 {
		t.Errorf("the record's registry requests lack the module's zip: %+v", a)
	}
	if up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"] != 1 {
		t.Errorf("the upstream served the zip %d times, want once", up.Fetches(fakegoproxy.KindZip)["fake.test/alpha@v1.0.0"])
	}
	if a.RefusedCount != 1 || len(a.Refused) != 1 {
		t.Fatalf("the record's refusals = %+v, want the one to elsewhere", a.Refused)
	}
	refused := a.Refused[0]
	if refused.Upstream != "elsewhere" || refused.Path != "fake.test/beta/@v/v1.0.0.info" || refused.Status != 403 || refused.Phase != contract.PhaseSetup ||
		!strings.Contains(refused.Why, `no registry named "elsewhere"`) {
		t.Errorf("the refusal = %+v", refused)
	}
	for _, q := range up.Requests() {
		if strings.Contains(q.Path, "beta") {
			t.Errorf("the refused request reached the upstream: %s %s", q.Method, q.Path)
		}
	}

	// The snapshots page: the count and the refusal in sight, the
	// requests collapsed until opened.
	d.signIn("alice", "/snapshots")
	sel := "#repo-186853002 .egress"
	shown := d.text(sel)
	for _, want := range []string{"1 refused.", "GET elsewhere fake.test/beta/@v/v1.0.0.info", `the server opens no registry named "elsewhere"`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the snapshots page's egress lacks %q: %q", want, shown)
		}
	}
	visible := func(css string) bool {
		t.Helper()
		v, err := chromedp.Run(d.tab, chromedp.Evaluate[bool](`document.querySelector(`+"`"+css+"`"+`).checkVisibility()`))
		if err != nil {
			t.Fatalf("%s: %v", css, err)
		}
		return v
	}
	if !visible(sel+" table.refused") || visible(sel+" table.requests") {
		t.Error("the refusals are folded away, or the requests are shown before they are opened")
	}
	d.screenshot("snapshots-egress")
	d.do("opening the registry requests", chromedp.Click(chromedp.CSS(sel+" details summary")), chromedp.WaitVisible(chromedp.CSS(sel+" table.requests")))
	if requests := d.text(sel + " table.requests"); !strings.Contains(requests, "GET goproxy fake.test/alpha/@v/v1.0.0.zip") {
		t.Errorf("the page's registry requests lack the module's zip: %q", requests)
	}
	if strings.Contains(d.html(), token) || strings.Contains(d.logs.String(), token) {
		t.Error("the upstream's token is on the page or in the log")
	}
}
