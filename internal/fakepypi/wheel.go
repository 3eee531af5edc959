package fakepypi

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"
)

// Wheel describes a pure-Python wheel for Build to make: one import
// package with an __init__.py, tagged py3-none-any.
type Wheel struct {
	// Name is the project name as published ("Demo_App"); Version its
	// version ("1.0").
	Name, Version string
	// Module is the import package's name; "" is the name with runs of
	// "-", "_" and "." made one "_" and lower-cased ("demo_app").
	Module string
	// Source is the module's __init__.py.
	Source string
	// Requires are Requires-Dist lines ("demo-dep>=1.0").
	Requires []string
	// RequiresPython is Requires-Python (">=3.8"), also served in the
	// index's data-requires-python / requires-python; "" is none.
	RequiresPython string
}

// namePattern is the core metadata spec's rule for a project name.
var namePattern = regexp.MustCompile(`(?i)^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$`)

// versionPattern is looser than PEP 440, but keeps out what would break
// the wheel's filename (a "-") or a URL.
var versionPattern = regexp.MustCompile(`^[0-9][0-9A-Za-z.+!_]*$`)

var modulePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var separators = regexp.MustCompile(`[-_.]+`)

// Normalize is the simple repository API's normalised project name:
// re.sub(r"[-_.]+", "-", name).lower().
func Normalize(name string) string {
	return strings.ToLower(separators.ReplaceAllString(name, "-"))
}

// escapedName is the name as it appears in a wheel's filename and its
// .dist-info directory (the binary distribution format spec: runs of
// -_. become one "_", lower case).
func escapedName(name string) string {
	return strings.ToLower(separators.ReplaceAllString(name, "_"))
}

// zipTime is the timestamp of every member, so that the same Wheel always
// builds the same bytes (and the same sha256). Zip cannot say earlier than
// 1980.
var zipTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// Build makes the wheel, per the binary distribution format spec (PEP
// 427): <module>/__init__.py, then <name>-<version>.dist-info/ with
// METADATA (Metadata-Version 2.1), WHEEL (Root-Is-Purelib, Tag
// py3-none-any) and RECORD, which lists every other member with its
// urlsafe-base64 sha256 and size, and itself with neither.
func (w Wheel) Build() (File, error) {
	if !namePattern.MatchString(w.Name) {
		return File{}, fmt.Errorf("wheel: %q is not a valid project name", w.Name)
	}
	if !versionPattern.MatchString(w.Version) {
		return File{}, fmt.Errorf("wheel %s: %q is not a version this builder accepts", w.Name, w.Version)
	}
	module := w.Module
	if module == "" {
		module = escapedName(w.Name)
	}
	if !modulePattern.MatchString(module) {
		return File{}, fmt.Errorf("wheel %s: %q is not a Python identifier", w.Name, module)
	}
	for _, r := range w.Requires {
		if r == "" || strings.ContainsAny(r, "\r\n") {
			return File{}, fmt.Errorf("wheel %s: Requires-Dist %q is not one line", w.Name, r)
		}
	}
	if strings.ContainsAny(w.RequiresPython, "\r\n") {
		return File{}, fmt.Errorf("wheel %s: Requires-Python %q is not one line", w.Name, w.RequiresPython)
	}

	distInfo := escapedName(w.Name) + "-" + w.Version + ".dist-info"
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", w.Name, w.Version)
	if w.RequiresPython != "" {
		fmt.Fprintf(&meta, "Requires-Python: %s\n", w.RequiresPython)
	}
	for _, r := range w.Requires {
		fmt.Fprintf(&meta, "Requires-Dist: %s\n", r)
	}
	members := []struct{ name, body string }{
		{module + "/__init__.py", w.Source},
		{distInfo + "/METADATA", meta.String()},
		{distInfo + "/WHEEL", "Wheel-Version: 1.0\nGenerator: fakepypi\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	add := func(name, body string) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipTime})
		if err != nil {
			return err
		}
		_, err = io.WriteString(f, body)
		return err
	}
	for _, m := range members {
		if err := add(m.name, m.body); err != nil {
			return File{}, fmt.Errorf("wheel %s: %w", w.Name, err)
		}
		sum := sha256.Sum256([]byte(m.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", m.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(m.body))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", distInfo)
	if err := add(distInfo+"/RECORD", record.String()); err != nil {
		return File{}, fmt.Errorf("wheel %s: %w", w.Name, err)
	}
	if err := zw.Close(); err != nil {
		return File{}, fmt.Errorf("wheel %s: %w", w.Name, err)
	}
	return File{
		Project:        w.Name,
		Version:        w.Version,
		Filename:       escapedName(w.Name) + "-" + w.Version + "-py3-none-any.whl",
		Data:           buf.Bytes(),
		RequiresPython: w.RequiresPython,
	}, nil
}

// File is one distribution file for an index to serve.
type File struct {
	// Project is the project's name as published; its page is under the
	// normalised name.
	Project string
	// Version is the release the file belongs to (the JSON form's
	// "versions", PEP 700).
	Version string
	// Filename is the file's name, the last element of its URL.
	Filename string
	// Data is the file's bytes.
	Data []byte
	// RequiresPython is served as data-requires-python / requires-python.
	RequiresPython string
}

// SHA256 is the hex sha256 of the file's bytes, as the index's
// #sha256=<hex> and pip's --hash=sha256:<hex> give it.
func (f File) SHA256() string { return sha256Hex(f.Data) }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// wheelMetadata is a wheel's <name>-<version>.dist-info/METADATA, which
// PEP 658 serves beside it; ok is false for a file that is not a wheel
// with one.
func wheelMetadata(f File) (meta []byte, ok bool) {
	if !strings.HasSuffix(f.Filename, ".whl") {
		return nil, false
	}
	zr, err := zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
	if err != nil {
		return nil, false
	}
	for _, m := range zr.File {
		dir, base := path.Split(m.Name)
		if base != "METADATA" || strings.Count(dir, "/") != 1 || !strings.HasSuffix(dir, ".dist-info/") {
			continue
		}
		rc, err := m.Open()
		if err != nil {
			return nil, false
		}
		b, err := io.ReadAll(rc)
		closeErr := rc.Close()
		if err != nil || closeErr != nil {
			return nil, false
		}
		return b, true
	}
	return nil, false
}
