package fakegoproxy

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// defaultTime is a served version's .info Time when its Module gives none:
// fixed, so that two runs serve the same bytes.
var defaultTime = time.Date(2024, time.January, 2, 3, 4, 5, 0, time.UTC)

// Module is one version of a module the proxy serves.
type Module struct {
	// Path is the module path ("fake.test/alpha"), as go.mod spells it;
	// upper case is allowed and is served case-encoded ("fake.test/!alpha").
	Path string
	// Version is a canonical semantic version ("v1.0.0"), with the /vN
	// suffix on Path that module.Check requires from v2 on.
	Version string
	// Files are the module's files by slash-separated name relative to
	// its root, go.mod among them (its module line must be Path).
	Files map[string]string
	// Time is the .info Time; zero serves a fixed date.
	Time time.Time
	// TamperZip serves a zip with one file more than the zip whose hash
	// the checksum database records, as a compromised mirror would, so a
	// test can show that the go command's verification is on.
	TamperZip bool
}

// String is path@version.
func (m Module) String() string { return m.Path + "@" + m.Version }

// servedModule is a Module made ready to serve: its go.mod and zip bytes
// and the go.sum lines the checksum database records for it.
type servedModule struct {
	Module
	mod, zip []byte
	// zipHash and modHash are the h1: hashes of the honest zip and go.mod,
	// whatever TamperZip serves.
	zipHash, modHash string
}

// prepare checks m and builds its zip.
func prepare(m Module) (*servedModule, error) {
	if err := module.Check(m.Path, m.Version); err != nil {
		return nil, err
	}
	if module.CanonicalVersion(m.Version) != m.Version {
		return nil, fmt.Errorf("%s: version is not canonical (want %q)", m, module.CanonicalVersion(m.Version))
	}
	gomod, ok := m.Files["go.mod"]
	if !ok {
		return nil, fmt.Errorf("%s: Files has no go.mod", m)
	}
	if got := modfile.ModulePath([]byte(gomod)); got != m.Path {
		return nil, fmt.Errorf("%s: go.mod says module %q", m, got)
	}
	honest, err := makeZip(m, m.Files)
	if err != nil {
		return nil, err
	}
	zipHash, err := hashZip(honest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	modHash, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: hashing go.mod: %w", m, err)
	}
	served := honest
	if m.TamperZip {
		tampered := maps.Clone(m.Files)
		tampered["tampered.txt"] = "these bytes are not the ones the checksum database recorded\n"
		if served, err = makeZip(m, tampered); err != nil {
			return nil, err
		}
	}
	if m.Time.IsZero() {
		m.Time = defaultTime
	}
	return &servedModule{Module: m, mod: []byte(gomod), zip: served, zipHash: zipHash, modHash: modHash}, nil
}

// goSum is the module's checksum database record: its two go.sum lines.
func (s *servedModule) goSum() []byte {
	return fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", s.Path, s.Version, s.zipHash, s.Path, s.Version, s.modHash)
}

// makeZip is the module zip the go command expects (module/zip's rules:
// path@version/ prefix, size limits, no vendored or nested modules).
func makeZip(m Module, files map[string]string) ([]byte, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	list := make([]modzip.File, 0, len(names))
	for _, name := range names {
		list = append(list, memFile{name: name, data: []byte(files[name])})
	}
	var buf bytes.Buffer
	if err := modzip.Create(&buf, module.Version{Path: m.Path, Version: m.Version}, list); err != nil {
		return nil, fmt.Errorf("%s: making its zip: %w", m, err)
	}
	return buf.Bytes(), nil
}

// hashZip is dirhash.HashZip over bytes in memory: the h1: hash the go
// command computes for a downloaded zip and checks against go.sum and the
// checksum database.
func hashZip(b []byte) (string, error) {
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return "", err
	}
	files := make([]string, 0, len(z.File))
	byName := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	return dirhash.Hash1(files, func(name string) (io.ReadCloser, error) {
		f, ok := byName[name]
		if !ok {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return f.Open()
	})
}

// memFile is a module file held in memory, for module/zip.Create.
type memFile struct {
	name string
	data []byte
}

func (f memFile) Path() string                 { return f.name }
func (f memFile) Lstat() (os.FileInfo, error)  { return memInfo(f), nil }
func (f memFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type memInfo memFile

func (i memInfo) Name() string       { return path.Base(i.name) }
func (i memInfo) Size() int64        { return int64(len(i.data)) }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return defaultTime }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// GoMod is a go.mod for modulePath at "go 1.21" that requires each of
// deps at its version: a consumer's, or a module's in a graph.
func GoMod(modulePath string, deps ...Module) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo 1.21\n", modulePath)
	if len(deps) > 0 {
		b.WriteString("\nrequire (\n")
		for _, d := range deps {
			fmt.Fprintf(&b, "\t%s %s\n", d.Path, d.Version)
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// Graph is n modules, prefix/m00 … prefix/m(n-1), each at v1.0.0 with one
// package of its name that imports (and whose go.mod requires) the next
// two modules, so that the go command walks a graph as deep as n and
// downloads every one of them to build prefix/m00: the shape of a real
// dependency tree, for benchmarks. A consumer requires Graph(...)[0] (or
// all of them, for a go.sum-complete go.mod).
func Graph(prefix string, n int) []Module {
	mods := make([]Module, n)
	for i := n - 1; i >= 0; i-- {
		name := fmt.Sprintf("m%02d", i)
		var deps []Module
		var imports, calls strings.Builder
		for j := i + 1; j <= i+2 && j < n; j++ {
			deps = append(deps, mods[j])
			fmt.Fprintf(&imports, "import %q\n", mods[j].Path)
			fmt.Fprintf(&calls, " + \" \" + %s.Name()", path.Base(mods[j].Path))
		}
		modPath := prefix + "/" + name
		mods[i] = Module{
			Path:    modPath,
			Version: "v1.0.0",
			Files: map[string]string{
				"go.mod": GoMod(modPath, deps...),
				name + ".go": fmt.Sprintf("// Package %s is module %d of a generated graph.\npackage %s\n\n%s\n"+
					"// Name names this module and those it imports.\nfunc Name() string { return %q%s }\n",
					name, i, name, imports.String(), name, calls.String()),
			},
		}
	}
	return mods
}
