package images

import (
	"archive/tar"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// helperDirLayerEnv makes the test binary, started again by
// TestDirLayerSameDigestInAnotherProcess, print DirLayer's digest of the
// named directory instead of running tests.
const helperDirLayerEnv = "INSPECT_IMAGES_DIRLAYER_HELPER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirLayerEnv); dir != "" {
		l, err := DirLayer(dir, "/cache/go/mod", nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		d, err := l.Digest()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(d.String())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	testRepo      = "Acme/Widget"
	testCachePath = "/cache/go/mod"
	baseLabel     = "org.example.base"
)

// testBuilt is the first snapshot's build time in every test; later ones
// add hours to it.
func testBuilt() time.Time {
	return time.Date(2025, 3, 4, 5, 6, 7, 890, time.UTC)
}

// testSHA is a distinct valid commit SHA for each i.
func testSHA(i int) string {
	return fmt.Sprintf("%040x", 0xc0ffee00+i)
}

func writeFile(t *testing.T, dir, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; tests want it exact.
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// removableTempDir is t.TempDir for trees that will hold read-only
// directories (as a Go module cache does): it makes them writable again
// before the test's cleanup removes the tree, which a non-root user could
// not do otherwise.
func removableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		// Best effort: if a chmod fails, TempDir's own cleanup reports
		// the directory it could not remove.
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o700)
			}
			return nil
		})
	})
	return dir
}

// newBaseImage is a tiny "toolchain" image: one layer with /etc/passwd and
// /etc/os-release, Docker media types (as most toolchain images have), and
// config settings Assemble must keep.
func newBaseImage(t *testing.T) v1.Image {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644)
	writeFile(t, root, "etc/os-release", "ID=testos\nVERSION_ID=1\n", 0o644)
	layer, err := DirLayer(root, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = "amd64"
	cfg.Config.Env = []string{"PATH=/usr/local/go/bin:/usr/bin:/bin", "GOTOOLCHAIN=local"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{baseLabel: "toolchain"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// repoFixture is a checkout and a Go module cache on the host.
type repoFixture struct {
	workspace string
	cache     string
}

func newRepoFixture(t *testing.T) repoFixture {
	t.Helper()
	fx := repoFixture{workspace: t.TempDir(), cache: removableTempDir(t)}
	writeFile(t, fx.workspace, "go.mod", "module example.com/widget\n\ngo 1.26\n", 0o644)
	writeFile(t, fx.workspace, "go.sum", "example.com/dep v1.0.0 h1:abc=\n", 0o644)
	writeFile(t, fx.workspace, "main.go", "package main\n\nfunc main() {}\n", 0o644)
	writeFile(t, fx.workspace, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
	writeFile(t, fx.workspace, ".git/objects/ab/cdef", "blob", 0o444)
	writeFile(t, fx.workspace, ".git/index", "volatile index", 0o644)
	writeFile(t, fx.workspace, ".git/logs/HEAD", "volatile log", 0o644)
	writeFile(t, fx.workspace, ".inspect/session", "reserved", 0o644)
	writeFile(t, fx.cache, "example.com/dep@v1.0.0/dep.go", "package dep\n", 0o444)
	writeFile(t, fx.cache, "cache/download/example.com/dep/@v/v1.0.0.zip", "zip", 0o444)
	if err := os.Chmod(filepath.Join(fx.cache, "example.com/dep@v1.0.0"), 0o555); err != nil {
		t.Fatal(err)
	}
	return fx
}

// input is the Assemble input for snapshot i of the fixture.
func (fx repoFixture) input(t *testing.T, base v1.Image, i int, previous v1.Image) Input {
	t.Helper()
	key, err := LockfileKey(fx.workspace, testCachePath, []string{"go.sum", "go.work.sum"})
	if err != nil {
		t.Fatal(err)
	}
	return Input{
		Base:         base,
		Repo:         testRepo,
		SHA:          testSHA(i),
		Version:      "v0.0.0-test",
		Built:        testBuilt().Add(time.Duration(i) * time.Hour),
		WorkspaceDir: fx.workspace,
		Caches:       []Cache{{Path: testCachePath, HostDir: fx.cache, Key: key}},
		Previous:     previous,
	}
}

func assemble(t *testing.T, in Input) Assembled {
	t.Helper()
	out, err := Assemble(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// layerDigests are the manifest's layer digests, in order.
func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]v1.Hash, len(m.Layers))
	for i, l := range m.Layers {
		out[i] = l.Digest
	}
	return out
}

func layerDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	h, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func layerDiffID(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	h, err := l.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func configDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func imageDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// tarEntry is what the tests look at in a layer's tar.
type tarEntry struct {
	hdr     *tar.Header
	content string
}

func layerEntries(t *testing.T, l v1.Layer) []tarEntry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(rc)
	tr := tar.NewReader(rc)
	var out []tarEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{hdr: hdr, content: string(b)})
	}
}

func entryNames(entries []tarEntry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.hdr.Name
	}
	return names
}

// testRegistry is an in-process registry that records which blobs were
// uploaded to it.
type testRegistry struct {
	server *httptest.Server

	mu             sync.Mutex
	uploadRequests int      // POST/PUT/PATCH under /blobs/uploads/
	committed      []string // digests of completed blob uploads
	// refuseDelete, when set, answers the DELETEs it matches in place of
	// the registry (a registry that disabled deletion).
	refuseDelete func(w http.ResponseWriter, r *http.Request) bool
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	reg.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg.observe(r)
		reg.mu.Lock()
		refuse := reg.refuseDelete
		reg.mu.Unlock()
		if r.Method == http.MethodDelete && refuse != nil && refuse(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(reg.server.Close)
	return reg
}

func (r *testRegistry) observe(req *http.Request) {
	if !strings.HasPrefix(req.URL.Path, "/v2/") || !strings.Contains(req.URL.Path, "/blobs/uploads/") {
		return
	}
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uploadRequests++
	// A blob upload completes with its digest in the query: on the final
	// PUT, or on a single POST (monolithic upload or cross-repo mount).
	if d := req.URL.Query().Get("digest"); d != "" {
		r.committed = append(r.committed, d)
	}
	if d := req.URL.Query().Get("mount"); d != "" {
		r.committed = append(r.committed, d)
	}
}

// takeUploads returns the digests uploaded since the last call, sorted, and
// how many upload requests there were.
func (r *testRegistry) takeUploads() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.committed)
	slices.Sort(out)
	out = slices.Compact(out)
	n := r.uploadRequests
	r.committed, r.uploadRequests = nil, 0
	return out, n
}

func (r *testRegistry) host() string {
	return strings.TrimPrefix(r.server.URL, "http://")
}

func (r *testRegistry) store(t *testing.T) *RegistryStore {
	t.Helper()
	s, err := NewRegistryStore(r.host()+"/inspect", remote.WithTransport(r.server.Client().Transport))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sortedStrings(hs ...v1.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	slices.Sort(out)
	return out
}
