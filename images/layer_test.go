package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sys/unix"
)

// newLayerTree is a directory with every kind of entry DirLayer meets.
func newLayerTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "b.txt", "bee\n", 0o640)
	writeFile(t, dir, "a/x.go", "package x\n", 0o444)
	writeFile(t, dir, "a-b/y", "why", 0o755)
	writeFile(t, dir, "skip/me", "excluded", 0o644)
	if err := os.Symlink("../b.txt", filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/does/not/exist", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "b.txt"), filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "a"), 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDirLayerEntries(t *testing.T) {
	dir := newLayerTree(t)
	// A live socket, which must be skipped like the fifo.
	sock, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	// The socket only has to exist during the walk; a close error at the
	// end of the test changes nothing.
	t.Cleanup(func() { _ = sock.Close() })

	l, err := DirLayer(dir, "/cache/go/mod", func(rel string) bool { return rel == "skip" })
	if err != nil {
		t.Fatal(err)
	}
	mt, err := l.MediaType()
	if err != nil || mt != types.OCILayer {
		t.Fatalf("media type %q, %v; want %q", mt, err, types.OCILayer)
	}
	entries := layerEntries(t, l)
	want := []string{
		"cache/", "cache/go/", "cache/go/mod/",
		"cache/go/mod/a/", "cache/go/mod/a/link", "cache/go/mod/a/x.go",
		"cache/go/mod/a-b/", "cache/go/mod/a-b/y",
		"cache/go/mod/b.txt", "cache/go/mod/dangling", "cache/go/mod/hard",
	}
	if got := entryNames(entries); !slices.Equal(got, want) {
		t.Fatalf("entries\n got %q\nwant %q", got, want)
	}
	byName := map[string]tarEntry{}
	for _, e := range entries {
		byName[e.hdr.Name] = e
		h := e.hdr
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d %q:%q, want 0:0 and no names", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: times %v %v %v, want mtime Unix 0 only", h.Name, h.ModTime, h.AccessTime, h.ChangeTime)
		}
		if len(h.PAXRecords) != 0 || len(h.Xattrs) != 0 { //nolint:staticcheck // Xattrs checked on purpose: none may appear.
			t.Errorf("%s: PAX records %v", h.Name, h.PAXRecords)
		}
	}
	checks := []struct {
		name     string
		typeflag byte
		mode     int64
		content  string
		link     string
	}{
		{"cache/", tar.TypeDir, 0o755, "", ""},
		{"cache/go/mod/", tar.TypeDir, 0o755, "", ""},
		{"cache/go/mod/a/", tar.TypeDir, 0o750, "", ""},
		{"cache/go/mod/a/x.go", tar.TypeReg, 0o444, "package x\n", ""},
		{"cache/go/mod/a/link", tar.TypeSymlink, 0o777, "", "../b.txt"},
		{"cache/go/mod/dangling", tar.TypeSymlink, 0o777, "", "/does/not/exist"},
		{"cache/go/mod/a-b/y", tar.TypeReg, 0o755, "why", ""},
		{"cache/go/mod/b.txt", tar.TypeReg, 0o640, "bee\n", ""},
		{"cache/go/mod/hard", tar.TypeReg, 0o640, "bee\n", ""},
	}
	for _, c := range checks {
		e := byName[c.name]
		if e.hdr.Typeflag != c.typeflag || e.hdr.Mode != c.mode || e.content != c.content || e.hdr.Linkname != c.link {
			t.Errorf("%s: type %q mode %o content %q link %q; want %q %o %q %q",
				c.name, e.hdr.Typeflag, e.hdr.Mode, e.content, e.hdr.Linkname, c.typeflag, c.mode, c.content, c.link)
		}
	}
}

func TestDirLayerAtRoot(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "etc/passwd", "root\n", 0o644)
	l, err := DirLayer(dir, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryNames(layerEntries(t, l)), []string{"etc/", "etc/passwd"}; !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
}

func TestDirLayerSameDigestDespiteMtimesAndOwners(t *testing.T) {
	dir := newLayerTree(t)
	first, err := DirLayer(dir, "/cache/go/mod", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Everything DirLayer must ignore changes: mtimes, atimes, owners.
	uid, gid := otherOwner(t)
	later := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, uid, gid); err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(p, later, later.Add(time.Duration(len(p))*time.Minute))
	})
	if err != nil {
		t.Fatal(err)
	}
	second, err := DirLayer(dir, "/cache/go/mod", nil)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := layerDigest(t, first), layerDigest(t, second)
	if d1 != d2 {
		t.Fatalf("digest changed with mtimes and owners: %s then %s", d1, d2)
	}
	id1, id2 := layerDiffID(t, first), layerDiffID(t, second)
	if id1 != id2 {
		t.Fatalf("diff id changed with mtimes and owners: %s then %s", id1, id2)
	}

	// A real content change must change the digest.
	writeFile(t, dir, "b.txt", "bee!\n", 0o640)
	third, err := DirLayer(dir, "/cache/go/mod", nil)
	if err != nil {
		t.Fatal(err)
	}
	if layerDigest(t, third) == d1 {
		t.Fatal("digest did not change with content")
	}
}

// otherOwner is an owner the tree's files do not have yet: any one as root
// (as CI runs), else the user with another of their groups when they have
// one.
func otherOwner(t *testing.T) (uid, gid int) {
	t.Helper()
	if os.Geteuid() == 0 {
		return 1234, 5678
	}
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if g != os.Getgid() {
			return os.Getuid(), g
		}
	}
	t.Logf("not root and in one group only: owners stay %d:%d", os.Getuid(), os.Getgid())
	return os.Getuid(), os.Getgid()
}

func TestDirLayerSameDigestInAnotherProcess(t *testing.T) {
	dir := newLayerTree(t)
	l, err := DirLayer(dir, "/cache/go/mod", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe)
	cmd.Env = append(os.Environ(), helperDirLayerEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper process: %v: %s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); got != want.String() {
		t.Fatalf("another process got %s, this one %s", got, want)
	}
}

func TestDirLayerIsASnapshot(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f", "before", 0o644)
	l, err := DirLayer(dir, "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f", "after, and longer", 0o644)

	entries := layerEntries(t, l)
	if got := entries[len(entries)-1].content; got != "before" {
		t.Fatalf("layer content %q; a later change to the host leaked in", got)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer closeQuietly(rc)
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	size, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(b)); got != digest.String() || int64(len(b)) != size {
		t.Fatalf("compressed bytes hash to %s (%d bytes), layer says %s (%d)", got, len(b), digest, size)
	}
}

func TestDirLayerRejects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "file", "x", 0o644)
	cases := []struct{ hostDir, imagePath string }{
		{dir, "relative/path"},
		{dir, "/not/clean/"},
		{dir, "/a/../b"},
		{filepath.Join(dir, "missing"), "/x"},
		{filepath.Join(dir, "file"), "/x"},
	}
	for _, c := range cases {
		if _, err := DirLayer(c.hostDir, c.imagePath, nil); err == nil {
			t.Errorf("DirLayer(%s, %q) succeeded", c.hostDir, c.imagePath)
		}
	}
}

func TestWorkspaceExclude(t *testing.T) {
	excluded := []string{
		".inspect", ".inspect/state.json",
		".git/index", ".git/FETCH_HEAD", ".git/ORIG_HEAD", ".git/HEAD.lock",
		".git/refs/heads/main.lock", ".git/objects/info/packs.lock",
		".git/logs", ".git/logs/HEAD", ".git/logs/refs/heads/main",
		".git/hooks", ".git/hooks/pre-commit.sample",
		".git/gc.pid", ".git/COMMIT_EDITMSG",
	}
	kept := []string{
		"main.go", ".git", ".git/HEAD", ".git/config", ".git/objects/ab/cdef",
		".git/refs/heads/main", ".git/packed-refs", "index", "logs/app.log",
		"src/.inspect", "pkg.lock", ".github/workflows/ci.yml", ".inspector",
	}
	for _, rel := range excluded {
		if !WorkspaceExclude(rel) {
			t.Errorf("WorkspaceExclude(%q) = false, want true", rel)
		}
	}
	for _, rel := range kept {
		if WorkspaceExclude(rel) {
			t.Errorf("WorkspaceExclude(%q) = true, want false", rel)
		}
	}
}

func TestLockfileKey(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "go.sum", "sum\n", 0o644)
	writeFile(t, dir, "empty", "", 0o644)
	writeFile(t, dir, "ab", "c", 0o644)
	writeFile(t, dir, "a", "bc", 0o644)

	key := func(cachePath string, names ...string) string {
		t.Helper()
		k, err := LockfileKey(dir, cachePath, names)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := key("/cache/go/mod", "go.sum", "go.work.sum")
	if !strings.HasPrefix(k, "sha256:") || len(k) != len("sha256:")+64 {
		t.Fatalf("key %q is not sha256:<64 hex>", k)
	}
	if again := key("/cache/go/mod", "go.sum", "go.work.sum"); again != k {
		t.Fatalf("not deterministic: %s then %s", k, again)
	}
	distinct := map[string]string{
		"base":              k,
		"other cache path":  key("/cache/go/other", "go.sum", "go.work.sum"),
		"order":             key("/cache/go/mod", "go.work.sum", "go.sum"),
		"missing vs empty":  key("/cache/go/mod", "go.sum", "empty"),
		"fewer names":       key("/cache/go/mod", "go.sum"),
		"name/content 1":    key("/x", "ab"),
		"name/content 2":    key("/x", "a"),
		"no lockfiles":      key("/cache/go/mod"),
		"only missing file": key("/cache/go/mod", "go.work.sum"),
	}
	seen := map[string]string{}
	for what, v := range distinct {
		if prev, ok := seen[v]; ok {
			t.Errorf("%s and %s give the same key", prev, what)
		}
		seen[v] = what
	}

	writeFile(t, dir, "go.sum", "sum changed\n", 0o644)
	if changed := key("/cache/go/mod", "go.sum", "go.work.sum"); changed == k {
		t.Error("key did not change with the lockfile")
	}

	outside := t.TempDir()
	writeFile(t, outside, "secret", "s", 0o644)
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../b", "", "escape", "."} {
		if _, err := LockfileKey(dir, "/x", []string{bad}); err == nil {
			t.Errorf("lockfile name %q accepted", bad)
		}
	}
}
