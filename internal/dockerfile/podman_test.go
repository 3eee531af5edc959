package dockerfile

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/inspecthq/inspect/internal/fakegithub"
)

// runc is the runtime podman is given here: its default, crun, refuses
// these machines' hybrid cgroup layout (shared/notes platform facts).
const runc = "/usr/sbin/runc"

// imageStartTimeout bounds each wait on the container: its first log
// line, GitHub's GET /app, the serving line, its exit after SIGTERM.
const imageStartTimeout = time.Minute

// webhookPath is app.WebhookPath (go-githubapp's default route), written
// out so this package's test does not compile the app.
const webhookPath = "/api/github/hook"

// TestImageServes builds the image's local and server targets with podman
// from testdata/Containerfile (the Dockerfile's stages on a Debian root
// built here, decision 0070) and runs `inspect serve` in each, as the
// image's own ENTRYPOINT and CMD start it, against the GitHub stand-in on
// the host's network. The floor the issue sets: /healthz answers 200 at
// once, /readyz and the webhook 503 while GET /app is unanswered, and
// /readyz 200 once it has been; SIGTERM stops it cleanly.
func TestImageServes(t *testing.T) {
	p := newPodman(t)
	buildCtx := p.buildContext(t)
	for _, target := range []string{"local", "server"} {
		t.Run(target, func(t *testing.T) {
			image := p.build(t, buildCtx, target)
			var runArgs []string
			executor := "none"
			if target == "local" {
				// The run flags the Dockerfile documents for the local
				// target, and no others: bubblewrap makes namespaces and a
				// /proc the default profiles forbid.
				runArgs = documentedRunFlags(t)
				executor = "local"
			}
			serveInImage(t, p, image, executor, runArgs)
		})
	}
}

func serveInImage(t *testing.T, p podman, image, executor string, runArgs []string) {
	gh := fakegithub.New()
	t.Cleanup(gh.Close)
	arrived, release := gh.HoldNext("GET", "/app")
	t.Cleanup(release) // a failed test must not leave the stand-in's handler parked

	// The config the image's CMD reads, /etc/inspect/inspect.yaml, and the
	// App's key beside it: readable by the image's user (10001 or 65532),
	// a test key in a test's directory.
	etc := t.TempDir()
	if err := os.Chmod(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "app-key.pem"), gh.AppPrivateKeyPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := yaml.Marshal(map[string]any{
		"listen": "127.0.0.1:0",
		"github": map[string]any{
			"api_url":          gh.APIURL(),
			"app_id":           gh.AppID(),
			"private_key_path": "/etc/inspect/app-key.pem",
			"webhook_secret":   "podman-test-secret",
		},
		"executor": map[string]any{"kind": executor},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "inspect.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	name := fmt.Sprintf("inspect-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	args := append([]string{"run", "--rm", "--name", name, "--network=host",
		"--volume", etc + ":/etc/inspect:ro"}, runArgs...)
	c := p.start(t, name, append(args, image)...)

	ctx, cancel := context.WithTimeout(t.Context(), imageStartTimeout)
	defer cancel()
	listening, err := c.waitLine(ctx, "listening; waiting for GitHub")
	if err != nil {
		t.Fatalf("%v\n%s", err, c.logs())
	}
	base := "http://" + listening.Listen
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatalf("the server in the container never asked GitHub GET /app\n%s", c.logs())
	}
	// GET /app is held: alive, not ready, no webhook taken.
	expectStatus(t, "GET", base+"/healthz", http.StatusOK)
	expectStatus(t, "GET", base+"/readyz", http.StatusServiceUnavailable)
	expectStatus(t, "POST", base+webhookPath, http.StatusServiceUnavailable)

	release()
	if _, err := c.waitLine(ctx, "inspect serving"); err != nil {
		t.Fatalf("%v\n%s", err, c.logs())
	}
	expectStatus(t, "GET", base+"/readyz", http.StatusOK)
	expectStatus(t, "GET", base+"/healthz", http.StatusOK)

	// A deploy's stop: SIGTERM to the container's inspect, a clean exit.
	if out, err := p.cmd(ctx, "stop", "--time", "30", name).CombinedOutput(); err != nil {
		t.Fatalf("podman stop: %v\n%s", err, out)
	}
	if code := c.wait(ctx); code != 0 {
		t.Errorf("inspect in the container exited %d after SIGTERM, want 0\n%s", code, c.logs())
	}
}

// documentedRunFlags is the --security-opt flags the Dockerfile's "Run
// flags" comment gives for the local target.
func documentedRunFlags(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^#\s+(--security-opt .*)$`).FindAllStringSubmatch(string(data), -1) {
		flags = append(flags, strings.Fields(m[1])...)
	}
	if len(flags) == 0 {
		t.Fatal("the Dockerfile documents no --security-opt run flags for the local target")
	}
	for i := 0; i < len(flags); i += 2 {
		if flags[i] != "--security-opt" || i+1 == len(flags) {
			t.Fatalf("the Dockerfile's run flags are not all --security-opt VALUE: %v", flags)
		}
	}
	return flags
}

func expectStatus(t *testing.T, method, url string, want int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	body, _ := io.ReadAll(resp.Body) // for the failure message only
	_ = resp.Body.Close()            // a read body's close cannot fail in a way that matters here
	if resp.StatusCode != want {
		t.Errorf("%s %s: %d %q, want %d", method, url, resp.StatusCode, body, want)
	}
}

// podman runs podman as these machines need it: runc, cgroupfs, and a
// containers.conf with no default ulimits (the defaults ask for more open
// files than the host's hard limit).
type podman struct{ bin, conf string }

func newPodman(t *testing.T) podman {
	t.Helper()
	bin, err := exec.LookPath("podman")
	if err != nil {
		t.Fatalf("podman is not installed (%v): run .ci/ensure-podman (make test does)", err)
	}
	if _, err := os.Stat(runc); err != nil {
		t.Fatalf("runc is not installed (%v): run .ci/ensure-podman (make test does)", err)
	}
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return podman{bin: bin, conf: conf}
}

func (p podman) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"--runtime", runc, "--cgroup-manager=cgroupfs"}, args...)...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+p.conf)
	return cmd
}

// debianRoot is the tag .ci/ensure-podman imports its Debian root under:
// the first 16 hex digits of the sha256 of the script followed by the
// Dockerfile's local stage's packages. The test fails, naming the script,
// when it is not there.
func (p podman) debianRoot(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("../../.ci/ensure-podman")
	if err != nil {
		t.Fatal(err)
	}
	local := mustStage(t, parseFile(t, "../../Dockerfile"), "local")
	sum := sha256.Sum256(fmt.Appendf(script, "packages: %s\n", strings.Join(aptInstalls(local), " ")))
	image := "localhost/inspect-test/debian:" + hex.EncodeToString(sum[:])[:16]
	if err := p.cmd(t.Context(), "image", "exists", image).Run(); err != nil {
		t.Fatalf("no image %s (%v): run .ci/ensure-podman (make test does)", image, err)
	}
	return image
}

// buildContext is a build context for the test Containerfile: the file
// and the inspect binary built here with README.md's flags.
func (p podman) buildContext(t *testing.T) string {
	t.Helper()
	buildCtx := t.TempDir()
	buildInspect(t, filepath.Join(buildCtx, "inspect"))
	data, err := os.ReadFile(testContainerfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(buildCtx, "Containerfile"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return buildCtx
}

// build builds one target of the test Containerfile, with no network (all
// it installs is in the root already), and removes the image at cleanup.
// podman's layer cache keeps the target's slow steps (apt-get install) for
// the next run.
func (p podman) build(t *testing.T, buildCtx, target string) string {
	t.Helper()
	base := p.debianRoot(t)
	iid := filepath.Join(t.TempDir(), "iid")
	out, err := p.cmd(t.Context(), "build", "--network=none", "--layers",
		"--build-arg", "DEBIAN_ROOT="+base, "--target", target, "--iidfile", iid,
		"--file", filepath.Join(buildCtx, "Containerfile"), buildCtx).CombinedOutput()
	if err != nil {
		t.Fatalf("podman build --target %s: %v\n%s", target, err, out)
	}
	id, err := os.ReadFile(iid)
	if err != nil {
		t.Fatal(err)
	}
	image := strings.TrimSpace(string(id))
	t.Cleanup(func() {
		// Best effort: a leftover image costs disk, not correctness.
		_ = p.cmd(context.Background(), "rmi", "--force", image).Run()
	})
	return image
}

// buildInspect builds cmd/inspect into out with README.md's command (the
// Dockerfile's build stage uses the same flags; TestRepositoryDockerfile).
func buildInspect(t *testing.T, out string) {
	t.Helper()
	fields := strings.Fields(readmeBuildCommand(t))
	var env, args []string
	for i := 0; i < len(fields); i++ {
		switch f := fields[i]; {
		case len(args) == 0 && f != "go" && strings.Contains(f, "="):
			env = append(env, f)
		case f == "-o":
			args = append(args, "-o", out)
			i++
		default:
			args = append(args, f)
		}
	}
	if len(args) < 2 || args[0] != "go" {
		t.Fatalf("README.md's build command is not `go build`: %v", fields)
	}
	cmd := exec.CommandContext(t.Context(), "go", args[1:]...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, b)
	}
}

// container is a running `podman run`, its output read line by line.
type container struct {
	p    podman
	name string
	cmd  *exec.Cmd

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced when a line arrives or output ends
	eof     bool

	readDone chan struct{}
	exitCode int
	exited   chan struct{}
}

func (p podman) start(t *testing.T, name string, args ...string) *container {
	t.Helper()
	c := &container{p: p, name: name, changed: make(chan struct{}), readDone: make(chan struct{}), exited: make(chan struct{})}
	// Not t.Context: the container must outlive a failed step so that
	// cleanup can stop it and read its last lines.
	c.cmd = p.cmd(context.Background(), args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout, c.cmd.Stderr = pw, pw
	if err := c.cmd.Start(); err != nil {
		_, _ = pr.Close(), pw.Close() // nothing was started to read from
		t.Fatalf("podman run: %v", err)
	}
	_ = pw.Close() // the child holds its copy; ours must go for EOF to come
	go c.read(pr)
	go func() {
		err := c.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			c.exitCode = exit.ExitCode()
		default:
			c.exitCode = -1
		}
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			// Best effort: podman run --rm removes it once it is gone.
			_ = p.cmd(context.Background(), "kill", name).Run()
		}
		<-c.exited
		<-c.readDone
		if t.Failed() {
			t.Logf("container %s:\n%s", name, c.logs())
		}
	})
	return c
}

func (c *container) read(r io.ReadCloser) {
	defer close(c.readDone)
	defer r.Close() // the read end; nothing to do if closing it fails
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.eof = true
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// logLine is what the test reads from inspect's JSON log lines.
type logLine struct {
	Message string `json:"message"`
	Listen  string `json:"listen"`
}

// waitLine waits for a JSON log line whose message starts with prefix.
func (c *container) waitLine(ctx context.Context, prefix string) (logLine, error) {
	seen := 0
	for {
		c.mu.Lock()
		lines, eof, changed := c.lines[seen:], c.eof, c.changed
		seen = len(c.lines)
		c.mu.Unlock()
		for _, l := range lines {
			var ll logLine
			if json.Unmarshal([]byte(l), &ll) == nil && strings.HasPrefix(ll.Message, prefix) {
				return ll, nil
			}
		}
		if eof {
			return logLine{}, fmt.Errorf("the container's output ended before %q", prefix)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return logLine{}, fmt.Errorf("no %q from the container: %w", prefix, ctx.Err())
		}
	}
}

// wait waits for `podman run` to end and returns its exit code (inspect's,
// -1 when ctx ends first).
func (c *container) wait(ctx context.Context) int {
	select {
	case <-c.exited:
		return c.exitCode
	case <-ctx.Done():
		return -1
	}
}

func (c *container) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}
