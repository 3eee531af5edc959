package policy

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Manifest entries for tests.
func added(path, content string) ChangedFile {
	return ChangedFile{Path: path, Mode: ModeFile, Content: []byte(content)}
}

func modified(path, before, after string) ChangedFile {
	return ChangedFile{Path: path, Mode: ModeFile, Content: []byte(after), BaseContent: []byte(before), Existed: true}
}

func deleted(path, before string) ChangedFile {
	return ChangedFile{Path: path, Deleted: true, BaseContent: []byte(before), Existed: true}
}

func symlink(path, target string) ChangedFile {
	return ChangedFile{Path: path, Mode: ModeSymlink, Content: []byte(target)}
}

type changeCase struct {
	name   string
	files  []ChangedFile
	limits ChangeLimits
	reason Reason   // "" = allowed
	bad    []string // want Offending exactly (nil = don't check)
	// The refusal's facts (the words are app/render's, and its tests
	// check them through ValidateChange): nil or 0 = don't check.
	faults          []PathFault
	protected       []string
	measured, limit int64
	lines           [2]int // added, removed
}

func checkChange(t *testing.T, cases []changeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, _ := ValidateChange(c.files, c.limits)
			if d.Allowed != (c.reason == "") || d.Reason != c.reason {
				t.Fatalf("ValidateChange = %+v, want reason %q", d, c.reason)
			}
			if d.Allowed {
				if !reflect.DeepEqual(d, ChangeDecision{Allowed: true}) {
					t.Errorf("allowed with facts: %+v", d)
				}
				return
			}
			if c.bad != nil && !slices.Equal(d.Offending, c.bad) {
				t.Errorf("Offending = %q, want %q", d.Offending, c.bad)
			}
			if c.faults != nil && !slices.Equal(d.Faults, c.faults) {
				t.Errorf("Faults = %+v, want %+v", d.Faults, c.faults)
			}
			if c.protected != nil && !slices.Equal(d.Protected, c.protected) {
				t.Errorf("Protected = %q, want %q", d.Protected, c.protected)
			}
			if c.measured != 0 && (d.Measured != c.measured || d.Limit != c.limit || [2]int{d.LinesAdded, d.LinesRemoved} != c.lines) {
				t.Errorf("measured %d (+%d -%d) against %d, want %d (%v) against %d",
					d.Measured, d.LinesAdded, d.LinesRemoved, d.Limit, c.measured, c.lines, c.limit)
			}
			checkRefusalFacts(t, d)
		})
	}
}

// checkRefusalFacts: a refusal's faults go with its paths, one each, for
// the two reasons that have them, and only those.
func checkRefusalFacts(t *testing.T, d ChangeDecision) {
	t.Helper()
	switch d.Reason {
	case ReasonInvalidPath:
		if len(d.Faults) != len(d.Offending) || len(d.Offending) == 0 {
			t.Errorf("%d faults for %d paths: %+v", len(d.Faults), len(d.Offending), d)
		}
		for i, f := range d.Faults {
			if f.Kind == "" || f.Kind == FaultLinkToProtected {
				t.Errorf("path %q has fault %+v", d.Offending[i], f)
			}
		}
	case ReasonProtectedPath:
		if len(d.Faults) != len(d.Offending) || len(d.Offending) == 0 || len(d.Protected) == 0 {
			t.Errorf("%d faults and %d patterns for %d paths: %+v", len(d.Faults), len(d.Protected), len(d.Offending), d)
		}
		for i, f := range d.Faults {
			if f.Kind != "" && f.Kind != FaultLinkToProtected {
				t.Errorf("protected path %q has fault %+v", d.Offending[i], f)
			}
		}
	default:
		if d.Faults != nil || d.Protected != nil {
			t.Errorf("faults or patterns for %s: %+v", d.Reason, d)
		}
	}
}

func TestValidateChangeAllowed(t *testing.T) {
	checkChange(t, []changeCase{
		{name: "empty manifest"},
		{name: "ordinary change", files: []ChangedFile{
			modified("main.go", "package main\n", "package main\n\nfunc main() {}\n"),
			added("docs/a.md", "# A\n"),
			deleted("old.txt", "x\n"),
		}},
		{name: "executable", files: []ChangedFile{{Path: "run.sh", Mode: ModeExecutable, Content: []byte("#!/bin/sh\n")}}},
		{name: "unicode path", files: []ChangedFile{added("docs/café/naïve.md", "x")}},
		{name: "lookalike of .git is just a name", files: []ChangedFile{added(".gіt/config", "x")}}, // Cyrillic і
		{name: ".github outside workflows", files: []ChangedFile{added(".github/ISSUE_TEMPLATE/bug.md", "x")}},
		{name: ".gitignore file", files: []ChangedFile{modified(".gitignore", "a\n", "a\nb\n")}},
		{name: "dotfiles that only start like .git", files: []ChangedFile{added(".gitkeep", ""), added("a/.github-ish", "x"), added("x.git", "y")}},
		{name: "deleting a file then writing a directory there", files: []ChangedFile{deleted("a", "x"), added("a/b", "y")}},
		{name: "symlink inside the repo", files: []ChangedFile{symlink("docs/latest", "v2"), symlink("a/b/c", "../../d/e")}},
		{name: "symlink with dot components", files: []ChangedFile{symlink("a/b", "./c/../d//e")}},
		{name: "deleted symlink-ish entry has no mode", files: []ChangedFile{{Path: "x", Deleted: true}}},
	})
}

func TestValidateChangeInvalidPaths(t *testing.T) {
	one := func(name, path string, fault PathFault) changeCase {
		return changeCase{name: name, files: []ChangedFile{added("ok.txt", "x"), added(path, "y")},
			reason: ReasonInvalidPath, bad: []string{path}, faults: []PathFault{fault}}
	}
	checkChange(t, []changeCase{
		one("empty", "", PathFault{Kind: FaultEmpty}),
		one("absolute", "/etc/passwd", PathFault{Kind: FaultAbsolute}),
		one("parent", "a/../../b", PathFault{Kind: FaultDotComponent, Name: ".."}),
		one("parent at start", "../x", PathFault{Kind: FaultDotComponent, Name: ".."}),
		one("dot at start", "./x", PathFault{Kind: FaultDotComponent, Name: "."}),
		one("dot inside", "x/./y", PathFault{Kind: FaultDotComponent, Name: "."}),
		one("double slash", "a//b", PathFault{Kind: FaultEmptyComponent}),
		one("trailing slash", "a/b/", PathFault{Kind: FaultTrailingSlash}),
		one(".git", ".git/config", PathFault{Kind: FaultDotGit}),
		one(".GIT", ".GIT/config", PathFault{Kind: FaultDotGit}),
		one(".Git nested", "sub/.Git/hooks/pre-commit", PathFault{Kind: FaultDotGit}),
		one(".git as a file", "a/.git", PathFault{Kind: FaultDotGit}),
		one("NTFS trailing dot", ".git./config", PathFault{Kind: FaultDotGit}),
		one("NTFS trailing space", ".git /config", PathFault{Kind: FaultDotGit}),
		one("NTFS stream", ".git::$INDEX_ALLOCATION/config", PathFault{Kind: FaultDotGit}),
		one("NTFS short name", "GIT~1/config", PathFault{Kind: FaultDotGit}),
		one("HFS ignorable", ".g\u200cit/config", PathFault{Kind: FaultHiddenCharacters}),
		one("NUL", "a\x00b", PathFault{Kind: FaultHiddenCharacters}),
		one("newline", "a\n/inspect run", PathFault{Kind: FaultHiddenCharacters}),
		one("tab", "a\tb", PathFault{Kind: FaultHiddenCharacters}),
		one("DEL", "a\x7fb", PathFault{Kind: FaultHiddenCharacters}),
		one("bidi override", "evil\u202etxt.exe", PathFault{Kind: FaultHiddenCharacters}),
		one("zero-width space", "READ\u200bME.md", PathFault{Kind: FaultHiddenCharacters}),
		one("invalid UTF-8", "a\xffb", PathFault{Kind: FaultNotUTF8}),
		one("backslash", `.github\workflows\ci.yml`, PathFault{Kind: FaultBackslash}),
		one("too long", strings.Repeat("a/", 2100)+"b", PathFault{Kind: FaultTooLong, Limit: 4096}),
		one("long component", strings.Repeat("a", 256), PathFault{Kind: FaultLongComponent, Limit: 255}),
		{name: "listed twice", files: []ChangedFile{added("a", "x"), modified("a", "", "y")},
			reason: ReasonInvalidPath, bad: []string{"a"}, faults: []PathFault{{Kind: FaultDuplicate}}},
		{name: "file and directory", files: []ChangedFile{added("a", "x"), added("a/b/c", "y"), added("z", "")},
			reason: ReasonInvalidPath, bad: []string{"a", "a/b/c"},
			faults: []PathFault{{Kind: FaultFileAndDirectory}, {Kind: FaultInsideFile}}},
		{name: "gitlink mode", files: []ChangedFile{{Path: "sub", Mode: "160000", Content: []byte("0123")}},
			reason: ReasonInvalidPath, faults: []PathFault{{Kind: FaultUnsupportedMode}}},
		{name: "tree mode", files: []ChangedFile{{Path: "dir", Mode: "040000"}}, reason: ReasonInvalidPath},
		{name: "no mode", files: []ChangedFile{{Path: "f", Content: []byte("x")}}, reason: ReasonInvalidPath},
		{name: "deleted with a bad path", files: []ChangedFile{deleted("../x", "")}, reason: ReasonInvalidPath},
		{name: "bad path that is also protected", files: []ChangedFile{added(".github/workflows/../x", "")},
			reason: ReasonInvalidPath},
	})
}

func TestValidateChangeSymlinks(t *testing.T) {
	bad := func(name, link, target string, fault PathFault) changeCase {
		return changeCase{name: name, files: []ChangedFile{symlink(link, target)},
			reason: ReasonInvalidPath, bad: []string{link}, faults: []PathFault{fault}}
	}
	checkChange(t, []changeCase{
		bad("absolute", "etc", "/etc/passwd", PathFault{Kind: FaultLinkAbsolute}),
		bad("climbs out", "a/b", "../../x", PathFault{Kind: FaultLinkOutside}),
		bad("climbs out from the root", "x", "..", PathFault{Kind: FaultLinkOutside}),
		bad("climbs out after going in", "x", "a/../../y", PathFault{Kind: FaultLinkOutside}),
		bad("empty", "x", "", PathFault{Kind: FaultLinkEmpty}),
		bad("NUL", "x", "a\x00b", PathFault{Kind: FaultLinkUnreadable}),
		bad("newline", "x", "a\nb", PathFault{Kind: FaultLinkUnreadable}),
		bad("invalid UTF-8", "x", "\xff", PathFault{Kind: FaultLinkUnreadable}),
		bad("backslash", "x", `..\..\etc`, PathFault{Kind: FaultLinkBackslash}),
		bad("into .git", "x", ".git/config", PathFault{Kind: FaultLinkIntoDotGit}),
		bad("into .GIT via a directory", "a/x", "../.GIT/hooks", PathFault{Kind: FaultLinkIntoDotGit}),
		bad("through .git", "x", "a/.git/../b", PathFault{Kind: FaultLinkIntoDotGit}),
		bad(".gitmodules as a link", ".gitmodules", "x", PathFault{Kind: FaultLinkInPlaceOfGit, Name: ".gitmodules"}),
		bad(".gitattributes as a link", "sub/.GitAttributes", "x", PathFault{Kind: FaultLinkInPlaceOfGit, Name: ".gitattributes"}),
		bad(".gitignore as a link", ".gitignore", "x", PathFault{Kind: FaultLinkInPlaceOfGit, Name: ".gitignore"}),
		bad(".mailmap as a link", ".mailmap", "x", PathFault{Kind: FaultLinkInPlaceOfGit, Name: ".mailmap"}),
		bad("too long", "x", strings.Repeat("a/", 2100), PathFault{Kind: FaultLinkTooLong, Limit: 4096}),
		{name: "deleted link needs no target", files: []ChangedFile{{Path: "x", Mode: ModeSymlink, Deleted: true}}},
	})
}

func TestValidateChangeProtected(t *testing.T) {
	wf := ".github/workflows/ci.yml"
	checkChange(t, []changeCase{
		{name: "modify a workflow", files: []ChangedFile{added("a.go", "x"), modified(wf, "a", "b")},
			reason: ReasonProtectedPath, bad: []string{wf}, faults: []PathFault{{}}, protected: []string{".github/workflows/"}},
		{name: "add a workflow", files: []ChangedFile{added(".github/workflows/new.yml", "on: push")}, reason: ReasonProtectedPath},
		{name: "delete a workflow", files: []ChangedFile{deleted(wf, "x")}, reason: ReasonProtectedPath},
		{name: "rename a workflow out", files: []ChangedFile{deleted(wf, "x"), added("ci.yml.bak", "x")},
			reason: ReasonProtectedPath, bad: []string{wf}},
		{name: "rename into workflows", files: []ChangedFile{deleted("x.yml", "x"), added(".github/workflows/x.yml", "x")},
			reason: ReasonProtectedPath, bad: []string{".github/workflows/x.yml"}},
		{name: "nested workflow dir", files: []ChangedFile{added(".github/workflows/sub/x.yml", "")}, reason: ReasonProtectedPath},
		{name: "file replacing the workflows directory", files: []ChangedFile{added(".github/workflows", "x")}, reason: ReasonProtectedPath},
		{name: "file replacing .github", files: []ChangedFile{added(".github", "x")}, reason: ReasonProtectedPath,
			bad: []string{".github"}, protected: []string{".github/workflows/"}},
		{name: "deleting .github", files: []ChangedFile{deleted(".github", "")}, reason: ReasonProtectedPath},
		{name: "other case", files: []ChangedFile{modified(".GitHub/Workflows/CI.yml", "a", "b")}, reason: ReasonProtectedPath},
		{name: "lookalike is not protected", files: []ChangedFile{added(".githuƄ/workflows/ci.yml", "x")}},
		{name: "sibling of workflows", files: []ChangedFile{added(".github/workflows-old/ci.yml", "x")}},
		{name: "local action", files: []ChangedFile{modified(".github/actions/setup/action.yml", "a", "b")},
			reason: ReasonProtectedPath, protected: []string{".github/actions/"}},
		{name: "inspect config", files: []ChangedFile{modified(".github/inspect.yml", "a", "b")},
			reason: ReasonProtectedPath, protected: []string{".github/inspect.yml"}},
		{name: "inspect config, yaml", files: []ChangedFile{added(".github/inspect.yaml", "a")}, reason: ReasonProtectedPath},
		{name: "CODEOWNERS at the root", files: []ChangedFile{modified("CODEOWNERS", "a", "b")}, reason: ReasonProtectedPath},
		{name: "CODEOWNERS in docs", files: []ChangedFile{added("docs/CODEOWNERS", "a")}, reason: ReasonProtectedPath},
		{name: "CODEOWNERS elsewhere is not GitHub's", files: []ChangedFile{added("pkg/CODEOWNERS", "a")}},
		{name: "buildkite pipeline", files: []ChangedFile{modified(".buildkite/pipeline.yml", "a", "b")}, reason: ReasonProtectedPath},
		{name: "repo config glob", files: []ChangedFile{added("deploy/prod/app.yaml", "x")},
			limits: ChangeLimits{ProtectedPaths: []string{"deploy/**"}}, reason: ReasonProtectedPath,
			protected: []string{"deploy/"}},
		{name: "repo config glob, anchored", files: []ChangedFile{added("src/deploy/x", "x")},
			limits: ChangeLimits{ProtectedPaths: []string{"deploy/**"}}},
		{name: "repo config glob at any depth", files: []ChangedFile{added("certs/dev/key.pem", "x"), added("a.go", "")},
			limits: ChangeLimits{ProtectedPaths: []string{"**/*.pem"}}, reason: ReasonProtectedPath, bad: []string{"certs/dev/key.pem"},
			protected: []string{"**/*.pem"}},
		{name: "any-depth glob does not protect every directory", files: []ChangedFile{added("certs", "x")},
			limits: ChangeLimits{ProtectedPaths: []string{"**/*.pem"}}},
		{name: "empty repo glob is ignored", files: []ChangedFile{added("a", "x")},
			limits: ChangeLimits{ProtectedPaths: []string{"", "/"}}},
		{name: "repo glob in upper case", files: []ChangedFile{added("secrets/x", "x")},
			limits: ChangeLimits{ProtectedPaths: []string{"SECRETS/"}}, reason: ReasonProtectedPath},
		{name: "several paths and patterns", files: []ChangedFile{
			modified(wf, "a", "b"), added("deploy/x", "y"), added(".github/workflows/b.yml", "c"),
		}, limits: ChangeLimits{ProtectedPaths: []string{"/deploy/"}}, reason: ReasonProtectedPath,
			bad:    []string{wf, "deploy/x", ".github/workflows/b.yml"},
			faults: []PathFault{{}, {}, {}}, protected: []string{".github/workflows/", "deploy/"}},
		{name: "symlink to a workflow", files: []ChangedFile{symlink("docs/ci.yml", "../.github/workflows/ci.yml")},
			reason: ReasonProtectedPath, bad: []string{"docs/ci.yml"},
			faults: []PathFault{{Kind: FaultLinkToProtected, Name: ".github/workflows/ci.yml"}}},
		{name: "symlink to .github", files: []ChangedFile{symlink("gh", ".github")}, reason: ReasonProtectedPath},
		{name: "symlink to the root", files: []ChangedFile{symlink("a/root", "..")}, reason: ReasonProtectedPath,
			faults: []PathFault{{Kind: FaultLinkToProtected, Name: ""}}},
		{name: "symlink at a workflow path", files: []ChangedFile{symlink(wf, "../../x")}, reason: ReasonProtectedPath,
			bad: []string{wf}, faults: []PathFault{{}}},
		{name: "symlink elsewhere", files: []ChangedFile{symlink("docs/x", "../src")}},
		// The owner's .github repository holds the org-wide config at its
		// root, where appconfig reads it as every repository's default.
		{name: "org config in the owner's .github repo", files: []ChangedFile{modified("inspect.yml", "a", "b")},
			limits: ChangeLimits{Repo: ".github"}, reason: ReasonProtectedPath,
			bad: []string{"inspect.yml"}, protected: []string{"inspect.yml"}},
		{name: "org config, yaml, added", files: []ChangedFile{added("inspect.yaml", "a")},
			limits: ChangeLimits{Repo: ".github"}, reason: ReasonProtectedPath},
		{name: "org config, deleted", files: []ChangedFile{deleted("inspect.yml", "a")},
			limits: ChangeLimits{Repo: ".github"}, reason: ReasonProtectedPath},
		{name: "org config repo name in another case", files: []ChangedFile{modified("Inspect.YML", "a", "b")},
			limits: ChangeLimits{Repo: ".GitHub"}, reason: ReasonProtectedPath},
		{name: "symlink to the org config", files: []ChangedFile{symlink("docs/x", "../inspect.yml")},
			limits: ChangeLimits{Repo: ".github"}, reason: ReasonProtectedPath},
		{name: "org config repo's own repo config stays protected", files: []ChangedFile{modified(".github/inspect.yml", "a", "b")},
			limits: ChangeLimits{Repo: ".github"}, reason: ReasonProtectedPath},
		{name: "inspect.yml at the root of another repo is no config", files: []ChangedFile{modified("inspect.yml", "a", "b")},
			limits: ChangeLimits{Repo: "widgets"}},
		{name: "inspect.yml deeper in the .github repo is no config", files: []ChangedFile{added("profile/inspect.yml", "a")},
			limits: ChangeLimits{Repo: ".github"}},
	})
}

func TestProtectedPathsFor(t *testing.T) {
	if got := ProtectedPathsFor("widgets"); !slices.Equal(got, DefaultProtectedPaths()) {
		t.Errorf("another repo's protected paths = %q, want the defaults", got)
	}
	got := ProtectedPathsFor(OrgConfigRepo)
	for _, p := range append(DefaultProtectedPaths(), "inspect.yml", "inspect.yaml") {
		if !slices.Contains(got, p) {
			t.Errorf("the org config repo's protected paths %q lack %q", got, p)
		}
	}
	for _, g := range got {
		if err := ValidGlob(g); err != nil {
			t.Errorf("%q: %v", g, err)
		}
	}
}

func TestValidateChangeBinary(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	late := strings.Repeat("a", 8000) + "\x00"
	checkChange(t, []changeCase{
		{name: "NUL byte", files: []ChangedFile{added("a.txt", "x"), added("logo.png", png)},
			reason: ReasonBinaryFile, bad: []string{"logo.png"}},
		{name: "invalid UTF-8", files: []ChangedFile{modified("latin1.txt", "x", "caf\xe9")}, reason: ReasonBinaryFile},
		{name: "UTF-16", files: []ChangedFile{added("u16.txt", "\xff\xfea\x00")}, reason: ReasonBinaryFile},
		{name: "NUL after 8000 bytes is text", files: []ChangedFile{added("big.txt", late)}},
		{name: "allowed", files: []ChangedFile{added("logo.png", png)}, limits: ChangeLimits{AllowBinary: true}},
		{name: "deleting a binary file", files: []ChangedFile{deleted("logo.png", png)}},
		{name: "binary into text", files: []ChangedFile{modified("x", png, "text")}},
		{name: "two", files: []ChangedFile{added("a.bin", "\x00"), added("b.bin", "\x00")},
			reason: ReasonBinaryFile, bad: []string{"a.bin", "b.bin"}},
	})
}

func TestValidateChangeLimits(t *testing.T) {
	three := []ChangedFile{added("a", "1\n2\n3\n"), modified("b", "x\n", "y\n"), deleted("c", "gone\n")}
	// 3 files, 4 added + 2 removed = 6 lines, 9 bytes written.
	checkChange(t, []changeCase{
		{name: "at every limit", files: three, limits: ChangeLimits{MaxFiles: 3, MaxLines: 6, MaxBytes: 8}},
		{name: "no limits", files: three, limits: ChangeLimits{MaxFiles: 0, MaxLines: -1, MaxBytes: -5}},
		{name: "too many files", files: three, limits: ChangeLimits{MaxFiles: 2},
			reason: ReasonTooManyFiles, measured: 3, limit: 2},
		{name: "too large", files: three, limits: ChangeLimits{MaxBytes: 7},
			reason: ReasonTooLarge, bad: []string{"a", "b"}, measured: 8, limit: 7},
		{name: "too many lines", files: three, limits: ChangeLimits{MaxLines: 5},
			reason: ReasonTooManyLines, bad: []string{"a", "b", "c"}, measured: 6, limit: 5, lines: [2]int{4, 2}},
		{name: "one large file", files: []ChangedFile{added("big", strings.Repeat("x", 3<<20))}, limits: ChangeLimits{MaxBytes: 1 << 20},
			reason: ReasonTooLarge, bad: []string{"big"}, measured: 3 << 20, limit: 1 << 20},
		{name: "deletions write nothing", files: []ChangedFile{deleted("big", strings.Repeat("x", 100))}, limits: ChangeLimits{MaxBytes: 1}},
		{name: "deletions count as lines", files: []ChangedFile{deleted("big", strings.Repeat("x\n", 100))}, limits: ChangeLimits{MaxLines: 99},
			reason: ReasonTooManyLines},
	})
}

// The first failing rule in the documented order gives the reason.
func TestValidateChangeOrder(t *testing.T) {
	files := []ChangedFile{
		added("a/../x", "1\n"),
		modified(".github/workflows/ci.yml", "a\n", "b\n"),
		added("logo.png", "\x00\n"),
		added("big.txt", strings.Repeat("line\n", 50)),
	}
	limits := ChangeLimits{MaxFiles: 1, MaxBytes: 10, MaxLines: 5}
	steps := []struct {
		reason Reason
		fix    func()
	}{
		{ReasonInvalidPath, func() { files[0].Path = "x" }},
		{ReasonProtectedPath, func() { files[1].Path = "ci.yml" }},
		{ReasonBinaryFile, func() { limits.AllowBinary = true }},
		{ReasonTooManyFiles, func() { limits.MaxFiles = 0 }},
		{ReasonTooLarge, func() { limits.MaxBytes = 0 }},
		{ReasonTooManyLines, func() { limits.MaxLines = 0 }},
		{"", nil},
	}
	for _, st := range steps {
		d, _ := ValidateChange(files, limits)
		if d.Reason != st.reason || d.Allowed != (st.reason == "") {
			t.Fatalf("got {%v %q}, want reason %q", d.Allowed, d.Reason, st.reason)
		}
		if st.fix != nil {
			st.fix()
		}
	}
}

// Every path behind a refusal is in Offending, raw: the renderer lists
// ten of them and escapes each.
func TestValidateChangeOffendingIsWhole(t *testing.T) {
	var files []ChangedFile
	for i := range 13 {
		files = append(files, added(fmt.Sprintf(".github/workflows/w%02d.yml", i), "x"))
	}
	d, _ := ValidateChange(files, ChangeLimits{})
	if len(d.Offending) != 13 || d.Offending[12] != ".github/workflows/w12.yml" {
		t.Fatalf("Offending = %q", d.Offending)
	}
	checkRefusalFacts(t, d)
	hostile := ".github/workflows/@everyone <img src=`x`>.yml"
	d, _ = ValidateChange([]ChangedFile{added(hostile, "x")}, ChangeLimits{})
	if d.Reason != ReasonProtectedPath || !slices.Equal(d.Offending, []string{hostile}) {
		t.Errorf("a hostile name is not kept as it came: %+v", d)
	}
}

func TestLineDiff(t *testing.T) {
	cases := []struct {
		before, after  string
		added, removed int
	}{
		{"", "", 0, 0},
		{"", "a\nb\n", 2, 0},
		{"", "a\nb", 2, 0},
		{"a\nb\n", "", 0, 2},
		{"a\n", "a\n", 0, 0},
		{"a\nb\nc\n", "a\nB\nc\n", 1, 1},
		{"a\nb\n", "a\nb\nc\n", 1, 0},
		{"a\nb", "a\nb\n", 1, 1}, // the newline at the end of the file
		{"a\r\nb\r\n", "a\nb\n", 2, 2},
		{"a\nb\nc\n", "c\nb\na\n", 0, 0}, // moves are not counted
		{"x\n", "x\nx\nx\n", 2, 0},       // repeats beyond the base's count are
		{"x\nx\nx\n", "x\n", 0, 2},
		{"\n\n\n", "\n", 0, 2},
	}
	for _, c := range cases {
		a, r := lineDiff([]byte(c.before), []byte(c.after))
		if a != c.added || r != c.removed {
			t.Errorf("lineDiff(%q, %q) = +%d -%d, want +%d -%d", c.before, c.after, a, r, c.added, c.removed)
		}
	}
}

func TestChangeSummary(t *testing.T) {
	png := "\x00PNG"
	files := []ChangedFile{
		added("pkg/x.go", "package x\n\nfunc X() {}\n"),
		modified("pkg/x_test.go", "package x\n\nfunc TestX(t *testing.T) {}\n", "package x\n\nfunc TestX(t *testing.T) { t.Log() }\n"),
		deleted("testdata/golden.txt", "a\nb\n"),
		added("logo.png", png),
		modified("img.png", png, png+"x"),
		symlink("docs/latest", "v2"),
		{Path: "ghost", Deleted: true}, // deleting what was not there
		{Path: "was-empty", Mode: ModeFile, Content: []byte("x\n"), Existed: true},
	}
	d, s := ValidateChange(files, ChangeLimits{AllowBinary: true})
	if !d.Allowed {
		t.Fatalf("refused: %+v", d)
	}
	want := ChangeSummary{
		Added: 3, Modified: 3, Deleted: 2,
		LinesAdded: 3 + 1 + 0 + 1 + 1, LinesRemoved: 1 + 2,
		Bytes:     int64(23 + len(files[1].Content) + 4 + 5 + 2 + 2),
		TestFiles: []string{"pkg/x_test.go", "testdata/golden.txt"},
		Binary:    []string{"logo.png", "img.png"},
		Files: []FileStat{
			{Path: "pkg/x.go", Status: FileAdded, LinesAdded: 3, Bytes: 23},
			{Path: "pkg/x_test.go", Status: FileModified, LinesAdded: 1, LinesRemoved: 1, Bytes: int64(len(files[1].Content)), Test: true},
			{Path: "testdata/golden.txt", Status: FileDeleted, LinesRemoved: 2, Test: true},
			{Path: "logo.png", Status: FileAdded, Bytes: 4, Binary: true},
			{Path: "img.png", Status: FileModified, Bytes: 5, Binary: true},
			{Path: "docs/latest", Status: FileAdded, LinesAdded: 1, Bytes: 2},
			{Path: "ghost", Status: FileDeleted},
			{Path: "was-empty", Status: FileModified, LinesAdded: 1, Bytes: 2},
		},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summary\n got %+v\nwant %+v", s, want)
	}

	// A refused change is still described in full.
	_, s2 := ValidateChange(files, ChangeLimits{})
	if !reflect.DeepEqual(s2, want) {
		t.Errorf("summary of a refused change differs: %+v", s2)
	}
}

func TestDefaultProtectedPaths(t *testing.T) {
	a := DefaultProtectedPaths()
	if !slices.Contains(a, ".github/workflows/**") {
		t.Fatalf("defaults lack the workflows: %q", a)
	}
	for _, g := range a {
		if err := ValidGlob(g); err != nil {
			t.Errorf("default %q: %v", g, err)
		}
	}
	a[0] = "nothing"
	clear(a[1:])
	if b := DefaultProtectedPaths(); b[0] != ".github/workflows/**" {
		t.Fatalf("the defaults can be changed by a caller: %q", b)
	}
	d, _ := ValidateChange([]ChangedFile{added(".github/workflows/x", "")}, ChangeLimits{})
	if d.Reason != ReasonProtectedPath {
		t.Fatalf("defaults changed: %+v", d)
	}
}

func TestValidateChangePure(t *testing.T) {
	files := []ChangedFile{
		modified("a.go", "x\n", "y\n"),
		added(".github/workflows/x.yml", "z"),
		symlink("l", "a.go"),
	}
	globs := []string{"deploy/", "/x/**"}
	limits := ChangeLimits{ProtectedPaths: globs, MaxLines: 1}
	keep := slices.Clone(files)
	for i := range keep {
		keep[i].Content = bytes.Clone(files[i].Content)
		keep[i].BaseContent = bytes.Clone(files[i].BaseContent)
	}
	d1, s1 := ValidateChange(files, limits)
	d2, s2 := ValidateChange(files, limits)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(s1, s2) {
		t.Fatalf("not deterministic")
	}
	if !reflect.DeepEqual(files, keep) || !slices.Equal(globs, []string{"deploy/", "/x/**"}) {
		t.Fatalf("arguments were modified")
	}
}

func FuzzValidateChange(f *testing.F) {
	f.Add("a.go", "b/c", []byte("x\n"), []byte("y\n"), uint8(0), uint8(0), "deploy/**", 0, 0, int64(0))
	f.Add(".github/workflows/ci.yml", "x", []byte("on: push"), []byte(nil), uint8(1), uint8(2), "", 1, 1, int64(1))
	f.Add("a/../b", ".GIT/x", []byte("\x00"), []byte("\xff"), uint8(2), uint8(5), "**", -1, -1, int64(-1))
	f.Add("l", "l/x", []byte("../.."), []byte("a\nb"), uint8(2), uint8(3), "*/x", 2, 3, int64(4))
	f.Add("a\n/inspect run", "`x`", []byte(""), []byte(""), uint8(3), uint8(7), "\\", 5, 5, int64(5))
	f.Fuzz(func(t *testing.T, p1, p2 string, content, baseContent []byte, mode, flags uint8, glob string, maxFiles, maxLines int, maxBytes int64) {
		modes := []string{ModeFile, ModeExecutable, ModeSymlink, "160000"}
		files := []ChangedFile{
			{Path: p1, Mode: modes[mode%4], Content: content, Deleted: flags&1 != 0, BaseContent: baseContent, Existed: flags&2 != 0},
			{Path: p2, Mode: modes[(mode/4)%4], Content: baseContent, Deleted: flags&4 != 0, BaseContent: content, Existed: flags&8 != 0},
		}
		limits := ChangeLimits{MaxFiles: maxFiles, MaxLines: maxLines, MaxBytes: maxBytes,
			AllowBinary: flags&16 != 0, ProtectedPaths: []string{glob}}
		d, s := ValidateChange(files, limits)
		d2, s2 := ValidateChange(files, limits)
		if !reflect.DeepEqual(d, d2) || !reflect.DeepEqual(s, s2) {
			t.Fatalf("not deterministic")
		}
		if d.Allowed != (d.Reason == "") {
			t.Fatalf("inconsistent decision: %+v", d)
		}
		if !d.Allowed {
			checkRefusalFacts(t, d)
			for _, o := range d.Offending {
				if o != p1 && o != p2 {
					t.Fatalf("offending %q is not in the manifest", o)
				}
			}
		}
		invalid := pathFault(p1).Kind != "" || pathFault(p2).Kind != "" || p1 == p2
		if invalid && d.Reason != ReasonInvalidPath {
			t.Fatalf("invalid path not refused as such: %q %q → %+v", p1, p2, d)
		}
		if d.Allowed {
			for _, f := range files {
				for _, g := range append(DefaultProtectedPaths(), glob) {
					if MatchGlob(asciiLower(g), asciiLower(f.Path)) {
						t.Fatalf("allowed %q protected by %q", f.Path, g)
					}
				}
				if f.Mode == ModeSymlink && !f.Deleted {
					if _, ok := resolveLink(f.Path, string(f.Content)); !ok {
						t.Fatalf("allowed a link out of the repository: %q → %q", f.Path, f.Content)
					}
				}
			}
		}
		if s.Added+s.Modified+s.Deleted != 2 || len(s.Files) != 2 || s.LinesAdded < 0 || s.LinesRemoved < 0 || s.Bytes < 0 {
			t.Fatalf("bad summary: %+v", s)
		}
	})
}
