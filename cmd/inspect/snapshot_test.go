package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/inspecthq/inspect/images"
)

const snapshotTestConfig = `snapshot:
  setup:
    - name: deps
      run: ["sh", "-c", "echo built-$(cat deps.lock) > /cache/deps/out"]
  caches:
    - path: /cache/deps
      lockfiles: [deps.lock]
`

// snapshotTestCommit writes files into the repository and commits them,
// returning the new HEAD.
func snapshotTestCommit(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var head string
	for _, args := range [][]string{{"add", "--all"}, {"commit", "--quiet", "-m", "change"}, {"rev-parse", "HEAD"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		head = strings.TrimSpace(string(out))
	}
	return head
}

func snapshotTestHead(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func snapshotRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(append([]string{"snapshot"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSnapshotBuildListGC(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		".github/inspect.yml": snapshotTestConfig,
		"deps.lock":           "v1\n",
		"main.go":             "package main\n",
	})
	sha1 := snapshotTestHead(t, repo)
	storeDir := filepath.Join(t.TempDir(), "store")
	store := "oci:" + storeDir
	workDir := sandboxWorkDir(t)
	build := func(extra ...string) (int, string, string) {
		return snapshotRun(t, append([]string{"build", "--dir", repo, "--repo", "acme/widget", "--store", store, "--work-dir", workDir}, extra...)...)
	}

	code, out, errOut := build()
	if code != 0 {
		t.Fatalf("first build: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"digest   sha256:", "sha      " + sha1, "store    " + store, "setup    ran (1 commands)", "rebuilt  /cache/deps"} {
		if !strings.Contains(out, want) {
			t.Errorf("first build's output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, `--- snapshot setup "snapshot deps"`) {
		t.Errorf("setup's output is not on stderr:\n%s", errOut)
	}
	digest1 := snapshotTestField(out, "digest")

	sha2 := snapshotTestCommit(t, repo, map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	code, out, errOut = build()
	if code != 0 {
		t.Fatalf("second build: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"sha      " + sha2, "setup    skipped", "reused   /cache/deps"} {
		if !strings.Contains(out, want) {
			t.Errorf("second build's output lacks %q:\n%s", want, out)
		}
	}
	digest2 := snapshotTestField(out, "digest")

	// A lockfile change runs setup again; --ref picks the commit.
	sha3 := snapshotTestCommit(t, repo, map[string]string{"deps.lock": "v2\n"})
	snapshotTestCommit(t, repo, map[string]string{"main.go": "package main // not built\n"})
	code, out, errOut = build("--ref", "HEAD~1")
	if code != 0 || !strings.Contains(out, "sha      "+sha3) || !strings.Contains(out, "rebuilt  /cache/deps") {
		t.Fatalf("--ref HEAD~1: exit %d\n%s\n%s", code, out, errOut)
	}
	digest3 := snapshotTestField(out, "digest")

	// list, with the store from the environment this time.
	t.Setenv("INSPECT_SNAPSHOTS_STORE", store)
	code, out, errOut = snapshotRun(t, "list", "--repo", "acme/widget")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, errOut)
	}
	for i, want := range [][2]string{{digest3, sha3}, {digest2, sha2}, {digest1, sha1}} {
		f := strings.Fields(lines[i])
		if len(f) != 3 || f[0] != want[0] || f[1] != want[1] {
			t.Errorf("list line %d = %q, want %s %s <time>", i, lines[i], want[0], want[1])
		}
	}

	code, out, errOut = snapshotRun(t, "gc", "--repo", "acme/widget", "--keep", "1")
	if code != 0 || strings.TrimSpace(out) != "removed  "+digest1+"\nremoved  "+digest2 && strings.TrimSpace(out) != "removed  "+digest2+"\nremoved  "+digest1 {
		t.Fatalf("gc: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = snapshotRun(t, "list", "--repo", "acme/widget", "--store", store)
	if code != 0 || !strings.HasPrefix(out, digest3+"  "+sha3+"  ") || strings.Count(out, "\n") != 1 {
		t.Errorf("list after gc: exit %d\n%s", code, out)
	}
	code, out, errOut = snapshotRun(t, "list", "--repo", "acme/other")
	if code != 0 || out != "" || !strings.Contains(errOut, "no snapshots of acme/other") {
		t.Errorf("list of a repo with none: exit %d %q %q", code, out, errOut)
	}
}

// snapshotTestField returns the value of a "key   value" line.
func snapshotTestField(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			return f[1]
		}
	}
	return ""
}

func TestSnapshotBuildFailureAndUsage(t *testing.T) {
	storeDir := filepath.Join(t.TempDir(), "store")
	store := "oci:" + storeDir
	workDir := sandboxWorkDir(t)
	failing := gitRepo(t, map[string]string{
		".github/inspect.yml": "snapshot:\n  setup:\n    - name: breaks\n      run: [\"sh\", \"-c\", \"echo nope >&2; exit 4\"]\n",
	})
	code, out, errOut := snapshotRun(t, "build", "--dir", failing, "--repo", "acme/widget", "--store", store, "--work-dir", workDir)
	if code != 1 || out != "" || !strings.Contains(errOut, `"snapshot breaks" exited with status 4`) || !strings.Contains(errOut, "nope") {
		t.Errorf("failing setup: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}
	code, out, errOut = snapshotRun(t, "list", "--repo", "acme/widget", "--store", store)
	if code != 0 || out != "" {
		t.Errorf("a failed build pushed something: %q %q", out, errOut)
	}

	noConfig := gitRepo(t, map[string]string{"README.md": "hi\n"})
	noSection := gitRepo(t, map[string]string{".github/inspect.yml": "verify:\n  - run: [\"true\"]\n"})
	badConfig := gitRepo(t, map[string]string{".github/inspect.yml": "snapshot:\n  caches:\n    - path: relative\n      lockfiles: [go.sum]\n"})
	// A repository narrowing a registry the server config does not open.
	narrowsUnknown := gitRepo(t, map[string]string{".github/inspect.yml": snapshotTestConfig + "registries:\n  npmjs: {phases: [setup]}\n"})
	noRegistries := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(noRegistries, []byte("sessions: {timeout: 20m}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"build", "--dir", noConfig}, "--repo must be OWNER/NAME"},
		{[]string{"build", "--dir", noConfig, "--repo", "acme"}, "--repo must be OWNER/NAME"},
		{[]string{"build", "--dir", noConfig, "--repo", "acme/widget", "extra"}, `unexpected argument "extra"`},
		{[]string{"build", "--dir", noConfig, "--repo", "acme/widget", "--store", store, "--sandbox-uid", "5"}, "both --sandbox-uid and --sandbox-gid"},
		{[]string{"build", "--dir", noConfig, "--repo", "acme/widget", "--store", "https://registry.example.com/x"}, "must be a registry repository prefix"},
		{[]string{"build", "--dir", noConfig, "--repo", "acme/widget", "--store", store}, "no .github/inspect.yml or .github/inspect.yaml is committed"},
		{[]string{"build", "--dir", noSection, "--repo", "acme/widget", "--store", store}, "has no snapshot section"},
		{[]string{"build", "--dir", badConfig, "--repo", "acme/widget", "--store", store}, "snapshot.caches[0].path"},
		{[]string{"build", "--dir", noSection, "--repo", "acme/widget", "--store", store, "--ref", "no-such-ref"}, `has no commit "no-such-ref"`},
		{[]string{"build", "--dir", t.TempDir(), "--repo", "acme/widget", "--store", store}, "is not a git checkout"},
		{[]string{"build", "--repo", "acme/widget", "--store", store, "--config", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
		{[]string{"build", "--dir", noSection, "--repo", "acme/widget", "--store", store, "--server-config", filepath.Join(t.TempDir(), "none.yaml")}, "--server-config: reading the server config"},
		{[]string{"build", "--dir", narrowsUnknown, "--repo", "acme/widget", "--store", store, "--server-config", noRegistries}, `registries.npmjs`},
		{[]string{"gc", "--repo", "acme/widget", "--store", store, "--keep", "0"}, "--keep must be at least 1"},
		{[]string{"list"}, "--repo must be OWNER/NAME"},
	}
	if os.Geteuid() == 0 {
		// Only root can give a checkout to someone else.
		foreign := gitRepo(t, map[string]string{".github/inspect.yml": snapshotTestConfig})
		if out, err := exec.Command("chown", "-R", "65534:65534", foreign).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v\n%s", err, out)
		}
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"build", "--dir", foreign, "--repo", "acme/widget", "--store", store}, "belongs to uid 65534, not to you"})
	}
	for _, tc := range cases {
		code, out, errOut := snapshotRun(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want 2; stderr %q lacks %q", tc.args, code, errOut, tc.want)
		}
		if out != "" {
			t.Errorf("%q: wrote to stdout: %q", tc.args, out)
		}
	}
	if code, out, _ := snapshotRun(t, "build", "-h"); code != 0 || out != "" {
		t.Errorf("build -h: exit %d", code)
	}
	var out2, errOut2 bytes.Buffer
	if code := run([]string{"help"}, &out2, &errOut2); code != 0 || !strings.Contains(out2.String(), "inspect snapshot build|list|gc") {
		t.Errorf("help does not list snapshot: %s", out2.String())
	}
}

func TestSnapshotBuildOnABaseImageFromARegistry(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	baseDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(baseDir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(baseDir, "etc", "base-marker"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	layer, err := images.DirLayer(baseDir, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	base, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(reg.URL, "http://") + "/toolchain/base@" + baseDigest.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, base, remote.WithContext(context.Background())); err != nil {
		t.Fatal(err)
	}

	repo := gitRepo(t, map[string]string{".github/inspect.yml": snapshotTestConfig, "deps.lock": "v1\n"})
	storeDir := filepath.Join(t.TempDir(), "store")
	code, out, errOut := snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widget", "--store", "oci:"+storeDir,
		"--work-dir", sandboxWorkDir(t), "--base", ref.String())
	if code != 0 {
		t.Fatalf("build on a base: exit %d\n%s", code, errOut)
	}
	st, err := images.OpenStore("oci:" + storeDir)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := v1.NewHash(snapshotTestField(out, "digest"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := st.Image(context.Background(), "acme/widget", digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 3 || m.Layers[0].Digest != want {
		t.Errorf("the snapshot's layers %v do not start with the base's %s", m.Layers, want)
	}

	code, _, errOut = snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widget", "--store", "oci:"+storeDir,
		"--work-dir", sandboxWorkDir(t), "--base", strings.TrimPrefix(reg.URL, "http://")+"/toolchain/missing@sha256:"+strings.Repeat("0", 64))
	if code != 1 || !strings.Contains(errOut, "pulling the base image") {
		t.Errorf("missing base: exit %d\n%s", code, errOut)
	}
	// A tag could move between builds: a base is pinned by digest.
	code, _, errOut = snapshotRun(t, "build", "--dir", repo, "--repo", "acme/widget", "--store", "oci:"+storeDir,
		"--work-dir", sandboxWorkDir(t), "--base", strings.TrimPrefix(reg.URL, "http://")+"/toolchain/base:latest")
	if code != 1 || !strings.Contains(errOut, "must be pinned by digest") {
		t.Errorf("base by tag: exit %d\n%s", code, errOut)
	}
}
