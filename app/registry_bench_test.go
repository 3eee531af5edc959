package app_test

// The registry egress's speed target (issue 15): `go mod download` of a
// module graph through the egress against straight from the upstream, and
// through a warm artifact cache. It runs only under `make bench` (go test
// runs no benchmark without -bench). Results are in BENCHMARKS.md,
// "Registry egress: go mod download (issue 15)".

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/runner/local"
)

const (
	// benchModules is the graph's size: the issue asks for at least 30.
	benchModules = 32
	// benchLatency is the upstream's per-request latency, as for a
	// registry across the internet.
	benchLatency = 30 * time.Millisecond
	benchToken   = "goproxy-bench-token-0123456789"
	// benchFloorStep and benchDownloadStep name the session's setup steps.
	benchFloorStep    = "floor"
	benchDownloadStep = "download"
)

// benchGoEnv is the go command's environment for the download, in the
// session (the repo's env) and on the host alike: a fresh module cache per
// run (the sandbox's /tmp is new for every command), writable so that it
// can be removed, and go.sum as the only word on hashes (-mod=readonly;
// go.sum is complete, so no checksum-database lookup is needed on either
// side).
var benchGoEnv = map[string]string{
	"GOTOOLCHAIN": "local",
	"GOFLAGS":     "-mod=readonly -modcacherw",
	"GOMODCACHE":  "/tmp/gomodcache",
	"GOCACHE":     "/tmp/gocache",
}

// benchGoRepo is a tidy module that requires every module of graph (go 1.21
// modules list their whole build list), with a complete go.sum, and a
// setup of two steps: floor, the go command doing nothing through the
// sandbox and the forwarder (what a session pays before any request), and
// download.
func benchGoRepo(up *fakegoproxy.Proxy, graph []fakegoproxy.Module) map[string]string {
	files := examples.SampleRepo()
	var sum strings.Builder
	for _, m := range graph {
		sum.WriteString(up.GoSum(m.Path, m.Version))
	}
	files["go.mod"] = fakegoproxy.GoMod("example.com/widgets", graph...)
	files["go.sum"] = sum.String()
	files["uses.go"] = fmt.Sprintf("package widgets\n\nimport m00 %q\n\n// Names comes from the graph.\nfunc Names() string { return m00.Name() }\n", graph[0].Path)
	var env strings.Builder
	for _, k := range slices.Sorted(maps.Keys(benchGoEnv)) {
		fmt.Fprintf(&env, "  %s: %q\n", k, benchGoEnv[k])
	}
	files[".github/inspect.yml"] = "agent:\n  preset: command\n  command: [\"true\"]\n" +
		"env:\n" + env.String() +
		"setup:\n" +
		"  - name: " + benchFloorStep + "\n    run: [go, env, GOMODCACHE]\n" +
		"  - name: " + benchDownloadStep + "\n    run: [go, mod, download]\n    timeout: 5m\n"
	return files
}

// benchEgress is the server's registry, the upstream, with its cache on
// or off.
func benchEgress(up *fakegoproxy.Proxy, cache bool) harnessOption {
	_, key := up.SumDB()
	return func(c *config.Server) {
		c.Egress.Registries = map[string]config.Registry{"goproxy": {Kind: "goproxy", URL: up.URL(), Token: benchToken, CAFile: up.CertFile(), SumDB: key}}
		c.Egress.Cache.Disabled = !cache
	}
}

// benchSessions is one app on the local executor whose sessions download
// the graph in setup.
type benchSessions struct {
	*harness
	lx *local.Executor
	// ran are the sessions run so far, by id.
	ran map[string]bool
}

// setup runs one session on the issue and returns its setup steps' times,
// as the supervisor measured them around each sandboxed command.
func (s *benchSessions) setup(b *testing.B) (floor, download time.Duration) {
	b.Helper()
	if code, _ := s.deliver("issue_comment", s.event(commentOpts{body: "/inspect fetch the modules"})); code != 200 {
		b.Fatalf("webhook answered %d", code)
	}
	s.runWorkers()
	sess := s.newSession(b)
	a, err := s.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		b.Fatalf("no attempt: %v (%s)\n%s", err, sess.State(), s.logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if st, err := s.lx.Wait(ctx, a.ExternalID); err != nil || st.ExitCode != 0 {
		b.Fatalf("inspect runner: %+v %v\n%s", st, err, s.logs)
	}
	s.runWorkers()
	ev := benchEvidence(b, s.harness, sess)
	for _, c := range ev.Commands {
		if c.Phase != contract.PhaseSetup {
			continue
		}
		if !c.Succeeded() {
			b.Fatalf("setup step %s failed: %s", c.Name, c.OutputTail)
		}
		switch c.Name {
		case benchFloorStep:
			floor = time.Duration(c.DurationMS) * time.Millisecond
		case benchDownloadStep:
			download = time.Duration(c.DurationMS) * time.Millisecond
		}
	}
	if floor == 0 || download == 0 {
		b.Fatalf("the evidence lacks the setup steps: %+v", ev.Commands)
	}
	return floor, download
}

// newSession is the one session on the issue that was not there before.
func (s *benchSessions) newSession(b *testing.B) store.Session {
	b.Helper()
	var fresh []store.Session
	for _, sess := range s.sessions() {
		if !s.ran[sess.ID] {
			fresh = append(fresh, sess)
		}
	}
	if len(fresh) != 1 {
		b.Fatalf("%d new sessions, want 1: %+v\n%s", len(fresh), fresh, s.logs)
	}
	s.ran[fresh[0].ID] = true
	return fresh[0]
}

func benchEvidence(b *testing.B, h *harness, sess store.Session) contract.Evidence {
	b.Helper()
	return attemptResult(b, h, sess.AttemptID).Evidence
}

// directDownload runs the host's go command in the repo, straight against
// the upstream (HTTPS, the token from a netrc file, as GOAUTH's default
// reads it), with the same environment as the session's but for the
// module and build caches, fresh temporary directories here too.
func directDownload(b *testing.B, up *fakegoproxy.Proxy, repo map[string]string) time.Duration {
	b.Helper()
	root := b.TempDir()
	dir := filepath.Join(root, "repo")
	for name, content := range repo {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	netrc := filepath.Join(root, "netrc")
	// The go command matches a netrc machine against the URL's host and
	// port.
	host := strings.TrimPrefix(up.URL(), "https://")
	if err := os.WriteFile(netrc, []byte("machine "+host+" login bench password "+benchToken+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	_, key := up.SumDB()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + root, "GOENV=off", "GOTELEMETRY=off",
		"GOPROXY=" + up.URL(), "GOSUMDB=" + key, "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=",
		"NETRC=" + netrc, "SSL_CERT_FILE=" + up.CertFile(),
	}
	for _, k := range slices.Sorted(maps.Keys(benchGoEnv)) {
		v := benchGoEnv[k]
		if rest, ok := strings.CutPrefix(v, "/tmp/"); ok {
			v = filepath.Join(root, rest)
		}
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download")
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("go mod download: %v\n%s", err, out)
	}
	return took
}

// fetched counts the upstream's answered requests by kind since the last
// reset, and resets.
func fetched(up *fakegoproxy.Proxy) map[fakegoproxy.Kind]int {
	kinds := map[fakegoproxy.Kind]int{}
	for _, r := range up.Requests() {
		if r.Status == http.StatusOK {
			kinds[r.Kind]++
		}
	}
	up.Reset()
	return kinds
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkGoModDownload measures, side by side, `go mod download` of a
// graph of benchModules modules from an upstream with benchLatency per
// request (TLS, a token):
//
//   - direct: the host's go command against the upstream itself;
//   - proxy: a real session's setup step on the local executor, through
//     every hop a session pays: the forwarder in the sandbox, the
//     supervisor's egress gate on its Unix socket, the supervisor's channel
//     client, the app's HTTP server and channel route (the session token
//     checked against the store), registryproxy (cache off), the upstream;
//   - warm: the same, on a second app whose artifact cache already holds
//     every zip and .mod (from one untimed session first).
//
// Each iteration runs all three, in an order that rotates, so the shared
// machine's noise falls on each alike. The proxy and warm figures are the
// supervisor's timing of the sandboxed command (bubblewrap, the forwarder
// and go); floor-ms is that timing for `go env`, the part of it that is
// the sandbox's and the forwarder's start, not the egress.
func BenchmarkGoModDownload(b *testing.B) {
	graph := fakegoproxy.Graph("bench.test/graph", benchModules)
	up := fakegoproxy.New(b, fakegoproxy.Options{Modules: graph, Token: benchToken, TLS: true, Latency: benchLatency})
	repo := benchGoRepo(up, graph)
	sessions := func(cache bool) *benchSessions {
		h, lx := newSandboxHarness(b, benchEgress(up, cache))
		h.gh.CommitFiles(owner, repoName, "main", repo, "a module with a graph of dependencies")
		return &benchSessions{harness: h, lx: lx, ran: map[string]bool{}}
	}
	cold, warm := sessions(false), sessions(true)

	// Untimed: the warm app's cache is filled, and the host's go binary
	// and the upstream are past their first run.
	warm.setup(b)
	if got := fetched(up); got[fakegoproxy.KindZip] != benchModules || got[fakegoproxy.KindMod] != benchModules || got[fakegoproxy.KindInfo] != benchModules {
		b.Fatalf("the first session fetched %v; want %d zips, .mod and .info files", got, benchModules)
	}
	if entries, _ := warm.registryCache.Stats(); entries != 3*benchModules {
		b.Fatalf("the cache holds %d entries after the first session; want %d", entries, 3*benchModules)
	}
	directDownload(b, up, repo)
	b.Logf("direct, from the upstream: %v", fetched(up))

	// Every zip and .mod comes from the upstream, straight or through the
	// proxy; through the warm cache, nothing does.
	artifacts := func(side string, got map[fakegoproxy.Kind]int, want int) {
		if got[fakegoproxy.KindZip] != want || got[fakegoproxy.KindMod] != want {
			b.Fatalf("%s: the upstream answered %v; want %d zips and .mod files", side, got, want)
		}
	}
	var direct, proxy, cached, floors []time.Duration
	sides := []func(){
		func() {
			direct = append(direct, directDownload(b, up, repo))
			artifacts("direct", fetched(up), benchModules)
		},
		func() {
			floor, d := cold.setup(b)
			proxy, floors = append(proxy, d), append(floors, floor)
			artifacts("proxy", fetched(up), benchModules)
		},
		func() {
			_, d := warm.setup(b)
			cached = append(cached, d)
			if got := fetched(up); len(got) != 0 {
				b.Fatalf("warm: the upstream answered %v; want nothing", got)
			}
		},
	}
	i := 0
	for b.Loop() {
		for j := range sides {
			sides[(i+j)%len(sides)]()
		}
		i++
	}
	for _, side := range []struct {
		name  string
		times []time.Duration
	}{{"direct", direct}, {"proxy", proxy}, {"warm", cached}, {"floor", floors}} {
		var each []string
		for _, d := range side.times {
			each = append(each, fmt.Sprintf("%.3f", d.Seconds()))
		}
		b.Logf("%s, s by iteration: %s", side.name, strings.Join(each, " "))
	}
	d, p, w := median(direct), median(proxy), median(cached)
	b.ReportMetric(d.Seconds(), "direct-s")
	b.ReportMetric(p.Seconds(), "proxy-s")
	b.ReportMetric(w.Seconds(), "warm-s")
	b.ReportMetric(float64(median(floors).Milliseconds()), "floor-ms")
	b.ReportMetric(p.Seconds()/d.Seconds(), "proxy/direct")
	b.ReportMetric(w.Seconds()/d.Seconds(), "warm/direct")
}
