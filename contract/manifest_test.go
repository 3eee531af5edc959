package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidatePath(t *testing.T) {
	ok := []string{
		"a", "a/b/c.go", ".github/workflows/ci.yml", ".gitignore", ".gitmodules", "dir.git/x",
		"x/.github", "a b/c d", "ünïcødé/文件.txt", "...", "a/.../b", "-rf", "a~b", "git~2",
		strings.Repeat("d/", 100) + "f", strings.Repeat("c", MaxPathComponentBytes),
	}
	for _, p := range ok {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		"":                   "empty",
		"/etc/passwd":        "relative",
		"..":                 "'..'",
		"../x":               "'..'",
		"a/../b":             "'..'",
		"a/..":               "'..'",
		".":                  "clean",
		"./a":                "clean",
		"a/./b":              "clean",
		"a//b":               "clean",
		"a/":                 "clean",
		".git":               ".git",
		".git/config":        ".git",
		"sub/.git/hooks/pre": ".git",
		"sub/.git":           ".git",
		".GIT/config":        ".git",
		".Git/config":        ".git",
		".git./config":       ".git",
		".git /config":       ".git",
		"GIT~1/config":       ".git",
		"a\x00b":             "NUL",
		"a\xffb":             "UTF-8",
		"a\nb":               "control",
		"a\tb":               "control",
		"a\u202eb":           "invisible",
		".g\u200cit/config":  "invisible",
		`a\b`:                "backslash",
		`..\x`:               "backslash",
		strings.Repeat("c", MaxPathComponentBytes+1): "component",
		strings.Repeat("d/", MaxPathBytes/2) + "f":   "more than",
	}
	for p, want := range bad {
		err := ValidatePath(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePath(%q) = %v, want an error mentioning %q", p, err, want)
		}
	}
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"a/b", "../a", "/a", ".git/x", "a//b", "a/./b", ".GIT.", "a\x00", "\xff", "ok.go", "git~1", "a\\b", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p)
		// A manifest with the path must validate without panicking, and
		// agree with ValidatePath.
		m := Manifest{Version: ManifestVersion, BaseSHA: sha1, Files: []FileChange{{Path: p, Mode: ModeFile}}}
		merr := m.Validate(ManifestLimits{})
		if (err == nil) != (merr == nil) {
			t.Fatalf("ValidatePath(%q) = %v but Manifest.Validate = %v", p, err, merr)
		}
		if err != nil {
			return
		}
		// Every accepted path is clean.
		switch {
		case p == "" || p == "." || len(p) > MaxPathBytes:
			t.Fatalf("accepted %q", p)
		case path.Clean(p) != p:
			t.Fatalf("accepted unclean %q (clean: %q)", p, path.Clean(p))
		case path.IsAbs(p) || strings.HasPrefix(p, "/"):
			t.Fatalf("accepted absolute %q", p)
		case !utf8.ValidString(p) || strings.ContainsRune(p, 0) || strings.ContainsRune(p, '\\'):
			t.Fatalf("accepted %q", p)
		}
		for _, c := range strings.Split(p, "/") {
			if c == ".." || c == "." || c == "" || strings.EqualFold(strings.TrimRight(c, ". "), ".git") || len(c) > MaxPathComponentBytes {
				t.Fatalf("accepted %q with component %q", p, c)
			}
		}
	})
}

func TestManifestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Manifest)
		limits ManifestLimits
		faults []string
	}{
		{"valid", func(*Manifest) {}, ManifestLimits{}, nil},
		{"valid empty change", func(m *Manifest) { m.Files = nil }, ManifestLimits{}, nil},
		{"valid empty file", func(m *Manifest) { m.Files[0].Content = nil }, ManifestLimits{}, nil},
		{"valid file replaced by a directory", func(m *Manifest) {
			m.Files = []FileChange{{Path: "a", Deleted: true}, {Path: "a/b", Mode: ModeFile, Added: true}}
		}, ManifestLimits{}, nil},
		{"valid at the limits", func(*Manifest) {}, ManifestLimits{MaxFiles: 5, MaxBytes: 13 + 13 + 10 + 11}, nil},

		{"version", func(m *Manifest) { m.Version = "" }, ManifestLimits{}, []string{"version"}},
		{"base sha", func(m *Manifest) { m.BaseSHA = "main" }, ManifestLimits{}, []string{"base_sha"}},
		{"path", func(m *Manifest) { m.Files[0].Path = "/abs" }, ManifestLimits{}, []string{"files[0].path"}},
		{"path into .git", func(m *Manifest) { m.Files[1].Path = ".git/hooks/post-checkout" }, ManifestLimits{}, []string{"files[1].path"}},
		{"duplicate", func(m *Manifest) { m.Files[3].Path = "calc/add.go" }, ManifestLimits{}, []string{"files[3].path"}},
		{"duplicate write and delete", func(m *Manifest) { m.Files[2].Path = "calc/add.go" }, ManifestLimits{}, []string{"files[2].path"}},
		{"file and directory", func(m *Manifest) { m.Files[1].Path = "calc/add.go/x" }, ManifestLimits{}, []string{"files[1].path"}},
		{"file and deep directory", func(m *Manifest) { m.Files[1].Path = "scripts/run/a/b" }, ManifestLimits{}, []string{"files[1].path"}},
		{"mode missing", func(m *Manifest) { m.Files[0].Mode = "" }, ManifestLimits{}, []string{"files[0].mode"}},
		{"mode submodule", func(m *Manifest) { m.Files[0].Mode = "160000" }, ManifestLimits{}, []string{"files[0].mode"}},
		{"mode tree", func(m *Manifest) { m.Files[0].Mode = "040000" }, ManifestLimits{}, []string{"files[0].mode"}},
		{"symlink without target", func(m *Manifest) { m.Files[4].Content = nil }, ManifestLimits{}, []string{"files[4].content"}},
		{"symlink target NUL", func(m *Manifest) { m.Files[4].Content = []byte("a\x00") }, ManifestLimits{}, []string{"files[4].content"}},
		{"deleted with content", func(m *Manifest) { m.Files[2].Content = []byte("x") }, ManifestLimits{}, []string{"files[2].content"}},
		{"deleted with mode", func(m *Manifest) { m.Files[2].Mode = ModeFile }, ManifestLimits{}, []string{"files[2].mode"}},
		{"added and deleted", func(m *Manifest) { m.Files[2].Added = true }, ManifestLimits{}, []string{"files[2].added"}},
		{"too many files", func(*Manifest) {}, ManifestLimits{MaxFiles: 4}, []string{"files"}},
		{"too many bytes", func(*Manifest) {}, ManifestLimits{MaxBytes: 46}, []string{"files"}},
		{"limits above the hard caps fall back to them", func(m *Manifest) {
			m.Files = []FileChange{{Path: "big", Mode: ModeFile, Content: make([]byte, HardMaxChangeBytes+1)}}
		}, ManifestLimits{MaxBytes: 1 << 40}, []string{"files"}},
		{"hard file cap", func(m *Manifest) {
			m.Files = make([]FileChange, HardMaxChangedFiles+1)
		}, ManifestLimits{MaxFiles: 1 << 30}, []string{"files"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := validManifest()
			tc.mutate(&m)
			wantFaults(t, m.Validate(tc.limits), tc.faults...)
		})
	}
}

func TestManifestFaultsAreCapped(t *testing.T) {
	m := validManifest()
	m.Files = make([]FileChange, 5000)
	for i := range m.Files {
		m.Files[i] = FileChange{Path: "/bad", Mode: "x"}
	}
	err := m.Validate(ManifestLimits{})
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatal(err)
	}
	if len(ve.Faults) > maxFaults+1 {
		t.Fatalf("%d faults reported", len(ve.Faults))
	}
	if last := ve.Faults[len(ve.Faults)-1]; !strings.Contains(last.Fault, "more") {
		t.Fatalf("the last fault does not say more were dropped: %v", last)
	}
}

func TestManifestNormalizeAndSummary(t *testing.T) {
	m := validManifest()
	m.Normalize()
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	if want := []string{"calc/add.go", "calc/new_test.go", "link", "old.txt", "scripts/run"}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("Normalize order %v, want %v", paths, want)
	}
	// Equal changes in any order encode to equal bytes.
	other := validManifest()
	for i, j := 0, len(other.Files)-1; i < j; i, j = i+1, j-1 {
		other.Files[i], other.Files[j] = other.Files[j], other.Files[i]
	}
	other.Normalize()
	a, _ := json.Marshal(&m)
	b, _ := json.Marshal(&other)
	if !bytes.Equal(a, b) {
		t.Fatalf("normalized encodings differ:\n%s\n%s", a, b)
	}
	s := m.Summary()
	if want := (ManifestSummary{Added: 1, Modified: 3, Deleted: 1, Bytes: 13 + 13 + 10 + 11}); s != want {
		t.Fatalf("Summary() = %+v, want %+v", s, want)
	}
	if s.Files() != 5 {
		t.Fatalf("Files() = %d", s.Files())
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m := validManifest()
	m.Files[0].Content = []byte{0, 1, 2, 0xff, '\n'} // binary content survives
	m.Normalize()
	data, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"content":"AAEC/wo="`)) {
		t.Errorf("content is not base64 in JSON: %s", data)
	}
	got, err := DecodeManifest(bytes.NewReader(data), ManifestLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip changed the manifest:\n got %+v\nwant %+v", got, m)
	}
}

func TestDecodeManifestStrict(t *testing.T) {
	m := validManifest()
	good, _ := json.Marshal(&m)
	for name, tc := range map[string]struct {
		data   []byte
		limits ManifestLimits
		want   error
		text   string
	}{
		"unknown field":       {bytes.Replace(good, []byte(`"deleted":true`), []byte(`"deleted":true,"rename_from":"x"`), 1), ManifestLimits{}, nil, `unknown field "rename_from"`},
		"bad base64":          {bytes.Replace(good, []byte(`"content":"`), []byte(`"content":"!!`), 1), ManifestLimits{}, nil, "illegal base64"},
		"wrong version":       {bytes.Replace(good, []byte(ManifestVersion), []byte("inspect.change-manifest/v7"), 1), ManifestLimits{}, ErrVersion, "v7"},
		"over the limits":     {good, ManifestLimits{MaxFiles: 2}, nil, "more than the 2 allowed"},
		"oversize":            {append([]byte(`{"version":"x","files":[`), bytes.Repeat([]byte(" "), MaxManifestBytes)...), ManifestLimits{}, ErrTooLarge, "larger"},
		"two documents":       {append(append([]byte(nil), good...), good...), ManifestLimits{}, nil, "after the JSON value"},
		"files is not a list": {[]byte(`{"version":"` + ManifestVersion + `","base_sha":"` + sha1 + `","files":{}}`), ManifestLimits{}, nil, "cannot unmarshal"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeManifest(bytes.NewReader(tc.data), tc.limits)
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v", err)
			}
		})
	}
}
