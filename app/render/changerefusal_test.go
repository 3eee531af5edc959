package render

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inspecthq/inspect/policy"
)

// The words of policy.ValidateChange's refusals, through ValidateChange as
// the app and `inspect run` ask it (decision 0047).

// Manifest entries for tests.
func addedFile(path, content string) policy.ChangedFile {
	return policy.ChangedFile{Path: path, Mode: policy.ModeFile, Content: []byte(content)}
}

func modifiedFile(path, before, after string) policy.ChangedFile {
	return policy.ChangedFile{Path: path, Mode: policy.ModeFile, Content: []byte(after), BaseContent: []byte(before), Existed: true}
}

func deletedFile(path, before string) policy.ChangedFile {
	return policy.ChangedFile{Path: path, Deleted: true, BaseContent: []byte(before), Existed: true}
}

func symlinkFile(path, target string) policy.ChangedFile {
	return policy.ChangedFile{Path: path, Mode: policy.ModeSymlink, Content: []byte(target)}
}

type changeCase struct {
	name   string
	files  []policy.ChangedFile
	limits policy.ChangeLimits
	reason policy.Reason // "" = allowed
	bad    []string      // want Offending exactly (nil = don't check)
	reply  []string      // want in ChangeRefusal
}

func checkChange(t *testing.T, cases []changeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, _ := policy.ValidateChange(c.files, c.limits)
			if d.Allowed != (c.reason == "") || d.Reason != c.reason {
				t.Fatalf("ValidateChange = {Allowed:%v Reason:%q Offending:%q}, want reason %q\nreply: %s",
					d.Allowed, d.Reason, d.Offending, c.reason, ChangeRefusal(d))
			}
			if d.Allowed {
				if ChangeRefusal(d) != "" || d.Offending != nil {
					t.Errorf("allowed with a reply or offenders: %+v", d)
				}
				return
			}
			if c.bad != nil && !slices.Equal(d.Offending, c.bad) {
				t.Errorf("Offending = %q, want %q", d.Offending, c.bad)
			}
			for _, want := range c.reply {
				if !strings.Contains(ChangeRefusal(d), want) {
					t.Errorf("reply %q lacks %q", ChangeRefusal(d), want)
				}
			}
			checkChangeReply(t, ChangeRefusal(d))
		})
	}
}

// checkChangeReply: one safe line (checkRefusalSafe), and every code span
// closed.
func checkChangeReply(t *testing.T, reply string) {
	t.Helper()
	checkRefusalSafe(t, reply)
	if strings.Count(reply, "`")%2 != 0 {
		t.Errorf("reply has an unbalanced code span: %q", reply)
	}
	if !strings.HasPrefix(reply, "Inspect didn't push this change, because ") {
		t.Errorf("reply does not start as the others do: %q", reply)
	}
	if !utf8.ValidString(reply) {
		t.Errorf("reply is not valid UTF-8: %q", reply)
	}
}

func TestValidateChangeInvalidPaths(t *testing.T) {
	one := func(name, path, note string) changeCase {
		return changeCase{name: name, files: []policy.ChangedFile{addedFile("ok.txt", "x"), addedFile(path, "y")},
			reason: policy.ReasonInvalidPath, bad: []string{path}, reply: []string{note}}
	}
	checkChange(t, []changeCase{
		one("empty", "", "(a path with no printable characters) (is empty)"),
		one("absolute", "/etc/passwd", "`/etc/passwd` (is absolute)"),
		one("parent", "a/../../b", "`a/../../b` (has a `..` component)"),
		one("parent at start", "../x", "has a `..` component"),
		one("dot at start", "./x", "`./x` (has a `.` component)"),
		one("dot inside", "x/./y", "has a `.` component"),
		one("double slash", "a//b", "has an empty component"),
		one("trailing slash", "a/b/", "ends with a slash"),
		one(".git", ".git/config", "has a `.git` component"),
		one(".GIT", ".GIT/config", "has a `.git` component"),
		one(".Git nested", "sub/.Git/hooks/pre-commit", "has a `.git` component"),
		one(".git as a file", "a/.git", "has a `.git` component"),
		one("NTFS trailing dot", ".git./config", "has a `.git` component"),
		one("NTFS trailing space", ".git /config", "has a `.git` component"),
		one("NTFS stream", ".git::$INDEX_ALLOCATION/config", "has a `.git` component"),
		one("NTFS short name", "GIT~1/config", "has a `.git` component"),
		one("HFS ignorable", ".g\u200cit/config", "has control or invisible characters"),
		one("NUL", "a\x00b", "`a\uFFFDb` (has control or invisible characters)"),
		one("newline", "a\n/inspect run", "`a\uFFFD/inspect run` (has control or invisible characters)"),
		one("tab", "a\tb", "has control or invisible characters"),
		one("DEL", "a\x7fb", "has control or invisible characters"),
		one("bidi override", "evil\u202etxt.exe", "has control or invisible characters"),
		one("zero-width space", "READ\u200bME.md", "has control or invisible characters"),
		one("invalid UTF-8", "a\xffb", "`a\uFFFDb` (is not valid UTF-8)"),
		one("backslash", `.github\workflows\ci.yml`, "has a backslash"),
		one("too long", strings.Repeat("a/", 2100)+"b", "is longer than 4096 bytes"),
		one("long component", strings.Repeat("a", 256), "has a component longer than 255 bytes"),
		{name: "listed twice", files: []policy.ChangedFile{addedFile("a", "x"), modifiedFile("a", "", "y")},
			reason: policy.ReasonInvalidPath, bad: []string{"a"}, reply: []string{"`a` (is listed more than once)"}},
		{name: "file and directory", files: []policy.ChangedFile{addedFile("a", "x"), addedFile("a/b/c", "y"), addedFile("z", "")},
			reason: policy.ReasonInvalidPath, bad: []string{"a", "a/b/c"},
			reply: []string{"`a` (is written both as a file and as a directory)", "`a/b/c` (is written inside a path"}},
		{name: "gitlink mode", files: []policy.ChangedFile{{Path: "sub", Mode: "160000", Content: []byte("0123")}},
			reason: policy.ReasonInvalidPath, reply: []string{"`sub` (has an unsupported file mode)"}},
		{name: "tree mode", files: []policy.ChangedFile{{Path: "dir", Mode: "040000"}}, reason: policy.ReasonInvalidPath},
		{name: "no mode", files: []policy.ChangedFile{{Path: "f", Content: []byte("x")}}, reason: policy.ReasonInvalidPath},
		{name: "deleted with a bad path", files: []policy.ChangedFile{deletedFile("../x", "")}, reason: policy.ReasonInvalidPath},
		{name: "bad path that is also protected", files: []policy.ChangedFile{addedFile(".github/workflows/../x", "")},
			reason: policy.ReasonInvalidPath},
	})
}

func TestValidateChangeSymlinks(t *testing.T) {
	bad := func(name, link, target, note string) changeCase {
		return changeCase{name: name, files: []policy.ChangedFile{symlinkFile(link, target)},
			reason: policy.ReasonInvalidPath, bad: []string{link}, reply: []string{note}}
	}
	checkChange(t, []changeCase{
		bad("absolute", "etc", "/etc/passwd", "is a symbolic link to an absolute path"),
		bad("climbs out", "a/b", "../../x", "points outside the repository"),
		bad("climbs out from the root", "x", "..", "points outside the repository"),
		bad("climbs out after going in", "x", "a/../../y", "points outside the repository"),
		bad("empty", "x", "", "empty target"),
		bad("NUL", "x", "a\x00b", "unreadable target"),
		bad("newline", "x", "a\nb", "unreadable target"),
		bad("invalid UTF-8", "x", "\xff", "unreadable target"),
		bad("backslash", "x", `..\..\etc`, "has a backslash"),
		bad("into .git", "x", ".git/config", "into `.git`"),
		bad("into .GIT via a directory", "a/x", "../.GIT/hooks", "into `.git`"),
		bad("through .git", "x", "a/.git/../b", "into `.git`"),
		bad(".gitmodules as a link", ".gitmodules", "x", "in place of git's `.gitmodules`"),
		bad(".gitattributes as a link", "sub/.GitAttributes", "x", "in place of git's `.gitattributes`"),
		bad(".gitignore as a link", ".gitignore", "x", "`.gitignore`"),
		bad(".mailmap as a link", ".mailmap", "x", "`.mailmap`"),
		bad("too long", "x", strings.Repeat("a/", 2100), "longer than 4096 bytes"),
		{name: "deleted link needs no target", files: []policy.ChangedFile{{Path: "x", Mode: policy.ModeSymlink, Deleted: true}}},
	})
}

func TestValidateChangeProtected(t *testing.T) {
	wf := ".github/workflows/ci.yml"
	checkChange(t, []changeCase{
		{name: "modify a workflow", files: []policy.ChangedFile{addedFile("a.go", "x"), modifiedFile(wf, "a", "b")},
			reason: policy.ReasonProtectedPath, bad: []string{wf},
			reply: []string{"it touches a protected path: `.github/workflows/ci.yml`.", "Ask for a change that leaves `.github/workflows/` alone, or make that edit yourself."}},
		{name: "add a workflow", files: []policy.ChangedFile{addedFile(".github/workflows/new.yml", "on: push")}, reason: policy.ReasonProtectedPath},
		{name: "delete a workflow", files: []policy.ChangedFile{deletedFile(wf, "x")}, reason: policy.ReasonProtectedPath},
		{name: "rename a workflow out", files: []policy.ChangedFile{deletedFile(wf, "x"), addedFile("ci.yml.bak", "x")},
			reason: policy.ReasonProtectedPath, bad: []string{wf}},
		{name: "rename into workflows", files: []policy.ChangedFile{deletedFile("x.yml", "x"), addedFile(".github/workflows/x.yml", "x")},
			reason: policy.ReasonProtectedPath, bad: []string{".github/workflows/x.yml"}},
		{name: "nested workflow dir", files: []policy.ChangedFile{addedFile(".github/workflows/sub/x.yml", "")}, reason: policy.ReasonProtectedPath},
		{name: "file replacing the workflows directory", files: []policy.ChangedFile{addedFile(".github/workflows", "x")}, reason: policy.ReasonProtectedPath},
		{name: "file replacing .github", files: []policy.ChangedFile{addedFile(".github", "x")}, reason: policy.ReasonProtectedPath,
			reply: []string{"`.github`", "leaves `.github/workflows/` alone"}},
		{name: "deleting .github", files: []policy.ChangedFile{deletedFile(".github", "")}, reason: policy.ReasonProtectedPath},
		{name: "other case", files: []policy.ChangedFile{modifiedFile(".GitHub/Workflows/CI.yml", "a", "b")}, reason: policy.ReasonProtectedPath},
		{name: "lookalike is not protected", files: []policy.ChangedFile{addedFile(".githuƄ/workflows/ci.yml", "x")}},
		{name: "sibling of workflows", files: []policy.ChangedFile{addedFile(".github/workflows-old/ci.yml", "x")}},
		{name: "local action", files: []policy.ChangedFile{modifiedFile(".github/actions/setup/action.yml", "a", "b")},
			reason: policy.ReasonProtectedPath, reply: []string{"leaves `.github/actions/` alone"}},
		{name: "inspect config", files: []policy.ChangedFile{modifiedFile(".github/inspect.yml", "a", "b")},
			reason: policy.ReasonProtectedPath, reply: []string{"leaves `.github/inspect.yml` alone"}},
		{name: "inspect config, yaml", files: []policy.ChangedFile{addedFile(".github/inspect.yaml", "a")}, reason: policy.ReasonProtectedPath},
		{name: "CODEOWNERS at the root", files: []policy.ChangedFile{modifiedFile("CODEOWNERS", "a", "b")}, reason: policy.ReasonProtectedPath},
		{name: "CODEOWNERS in docs", files: []policy.ChangedFile{addedFile("docs/CODEOWNERS", "a")}, reason: policy.ReasonProtectedPath},
		{name: "CODEOWNERS elsewhere is not GitHub's", files: []policy.ChangedFile{addedFile("pkg/CODEOWNERS", "a")}},
		{name: "buildkite pipeline", files: []policy.ChangedFile{modifiedFile(".buildkite/pipeline.yml", "a", "b")}, reason: policy.ReasonProtectedPath},
		{name: "repo config glob", files: []policy.ChangedFile{addedFile("deploy/prod/app.yaml", "x")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"deploy/**"}}, reason: policy.ReasonProtectedPath,
			reply: []string{"leaves `deploy/` alone"}},
		{name: "repo config glob, anchored", files: []policy.ChangedFile{addedFile("src/deploy/x", "x")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"deploy/**"}}},
		{name: "repo config glob at any depth", files: []policy.ChangedFile{addedFile("certs/dev/key.pem", "x"), addedFile("a.go", "")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"**/*.pem"}}, reason: policy.ReasonProtectedPath, bad: []string{"certs/dev/key.pem"},
			reply: []string{"leaves `**/*.pem` alone"}},
		{name: "any-depth glob does not protect every directory", files: []policy.ChangedFile{addedFile("certs", "x")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"**/*.pem"}}},
		{name: "empty repo glob is ignored", files: []policy.ChangedFile{addedFile("a", "x")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"", "/"}}},
		{name: "repo glob in upper case", files: []policy.ChangedFile{addedFile("secrets/x", "x")},
			limits: policy.ChangeLimits{ProtectedPaths: []string{"SECRETS/"}}, reason: policy.ReasonProtectedPath},
		{name: "several paths and patterns", files: []policy.ChangedFile{
			modifiedFile(wf, "a", "b"), addedFile("deploy/x", "y"), addedFile(".github/workflows/b.yml", "c"),
		}, limits: policy.ChangeLimits{ProtectedPaths: []string{"/deploy/"}}, reason: policy.ReasonProtectedPath,
			bad: []string{wf, "deploy/x", ".github/workflows/b.yml"},
			reply: []string{"touches protected paths: `.github/workflows/ci.yml`, `deploy/x` and `.github/workflows/b.yml`.",
				"leaves `.github/workflows/` and `deploy/` alone"}},
		{name: "symlink to a workflow", files: []policy.ChangedFile{symlinkFile("docs/ci.yml", "../.github/workflows/ci.yml")},
			reason: policy.ReasonProtectedPath, bad: []string{"docs/ci.yml"},
			reply: []string{"`docs/ci.yml` (a symbolic link to `.github/workflows/ci.yml`)"}},
		{name: "symlink to .github", files: []policy.ChangedFile{symlinkFile("gh", ".github")}, reason: policy.ReasonProtectedPath},
		{name: "symlink to the root", files: []policy.ChangedFile{symlinkFile("a/root", "..")}, reason: policy.ReasonProtectedPath,
			reply: []string{"(a symbolic link to `.`)"}},
		{name: "symlink at a workflow path", files: []policy.ChangedFile{symlinkFile(wf, "../../x")}, reason: policy.ReasonProtectedPath,
			reply: []string{"touches a protected path: `.github/workflows/ci.yml`."}},
		{name: "symlink elsewhere", files: []policy.ChangedFile{symlinkFile("docs/x", "../src")}},
		// The owner's .github repository holds the org-wide config at its
		// root, where appconfig reads it as every repository's default.
		{name: "org config in the owner's .github repo", files: []policy.ChangedFile{modifiedFile("inspect.yml", "a", "b")},
			limits: policy.ChangeLimits{Repo: ".github"}, reason: policy.ReasonProtectedPath,
			reply: []string{"touches a protected path: `inspect.yml`.", "leaves `inspect.yml` alone"}},
		{name: "org config, yaml, added", files: []policy.ChangedFile{addedFile("inspect.yaml", "a")},
			limits: policy.ChangeLimits{Repo: ".github"}, reason: policy.ReasonProtectedPath},
		{name: "org config, deleted", files: []policy.ChangedFile{deletedFile("inspect.yml", "a")},
			limits: policy.ChangeLimits{Repo: ".github"}, reason: policy.ReasonProtectedPath},
		{name: "org config repo name in another case", files: []policy.ChangedFile{modifiedFile("Inspect.YML", "a", "b")},
			limits: policy.ChangeLimits{Repo: ".GitHub"}, reason: policy.ReasonProtectedPath},
		{name: "symlink to the org config", files: []policy.ChangedFile{symlinkFile("docs/x", "../inspect.yml")},
			limits: policy.ChangeLimits{Repo: ".github"}, reason: policy.ReasonProtectedPath},
		{name: "org config repo's own repo config stays protected", files: []policy.ChangedFile{modifiedFile(".github/inspect.yml", "a", "b")},
			limits: policy.ChangeLimits{Repo: ".github"}, reason: policy.ReasonProtectedPath},
		{name: "inspect.yml at the root of another repo is no config", files: []policy.ChangedFile{modifiedFile("inspect.yml", "a", "b")},
			limits: policy.ChangeLimits{Repo: "widgets"}},
		{name: "inspect.yml deeper in the .github repo is no config", files: []policy.ChangedFile{addedFile("profile/inspect.yml", "a")},
			limits: policy.ChangeLimits{Repo: ".github"}},
	})
}

func TestValidateChangeBinary(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	late := strings.Repeat("a", 8000) + "\x00"
	checkChange(t, []changeCase{
		{name: "NUL byte", files: []policy.ChangedFile{addedFile("a.txt", "x"), addedFile("logo.png", png)},
			reason: policy.ReasonBinaryFile, bad: []string{"logo.png"},
			reply: []string{"adds or changes a binary file, which this repository doesn't accept from Inspect: `logo.png`.", "without it, or add that file yourself."}},
		{name: "invalid UTF-8", files: []policy.ChangedFile{modifiedFile("latin1.txt", "x", "caf\xe9")}, reason: policy.ReasonBinaryFile},
		{name: "UTF-16", files: []policy.ChangedFile{addedFile("u16.txt", "\xff\xfea\x00")}, reason: policy.ReasonBinaryFile},
		{name: "NUL after 8000 bytes is text", files: []policy.ChangedFile{addedFile("big.txt", late)}},
		{name: "allowed", files: []policy.ChangedFile{addedFile("logo.png", png)}, limits: policy.ChangeLimits{AllowBinary: true}},
		{name: "deleting a binary file", files: []policy.ChangedFile{deletedFile("logo.png", png)}},
		{name: "binary into text", files: []policy.ChangedFile{modifiedFile("x", png, "text")}},
		{name: "two", files: []policy.ChangedFile{addedFile("a.bin", "\x00"), addedFile("b.bin", "\x00")},
			reason: policy.ReasonBinaryFile, reply: []string{"binary files, which", "`a.bin` and `b.bin`", "without them, or add those files yourself."}},
	})
}

func TestValidateChangeLimits(t *testing.T) {
	three := []policy.ChangedFile{addedFile("a", "1\n2\n3\n"), modifiedFile("b", "x\n", "y\n"), deletedFile("c", "gone\n")}
	// 3 files, 4 added + 2 removed = 6 lines, 9 bytes written.
	checkChange(t, []changeCase{
		{name: "at every limit", files: three, limits: policy.ChangeLimits{MaxFiles: 3, MaxLines: 6, MaxBytes: 8}},
		{name: "no limits", files: three, limits: policy.ChangeLimits{MaxFiles: 0, MaxLines: -1, MaxBytes: -5}},
		{name: "too many files", files: three, limits: policy.ChangeLimits{MaxFiles: 2},
			reason: policy.ReasonTooManyFiles, reply: []string{"it touches 3 files, and the limit is 2.", "Ask for a smaller change"}},
		{name: "too large", files: three, limits: policy.ChangeLimits{MaxBytes: 7},
			reason: policy.ReasonTooLarge, bad: []string{"a", "b"},
			reply: []string{"it writes 8 bytes, and the limit is 7 bytes.", "The largest files are `a` and `b`."}},
		{name: "too many lines", files: three, limits: policy.ChangeLimits{MaxLines: 5},
			reason: policy.ReasonTooManyLines, bad: []string{"a", "b", "c"},
			reply: []string{"it changes 6 lines (4 added, 2 removed), and the limit is 5.", "The most changed files are `a`, `b` and `c`."}},
		{name: "one large file", files: []policy.ChangedFile{addedFile("big", strings.Repeat("x", 3<<20))}, limits: policy.ChangeLimits{MaxBytes: 1 << 20},
			reason: policy.ReasonTooLarge, reply: []string{"writes 3.0 MiB, and the limit is 1.0 MiB. The largest file is `big`."}},
		{name: "deletions write nothing", files: []policy.ChangedFile{deletedFile("big", strings.Repeat("x", 100))}, limits: policy.ChangeLimits{MaxBytes: 1}},
		{name: "deletions count as lines", files: []policy.ChangedFile{deletedFile("big", strings.Repeat("x\n", 100))}, limits: policy.ChangeLimits{MaxLines: 99},
			reason: policy.ReasonTooManyLines},
	})
}

// The first failing rule in the documented order gives the reason.
func TestValidateChangeReplyLists(t *testing.T) {
	var files []policy.ChangedFile
	for i := range 13 {
		files = append(files, addedFile(fmt.Sprintf(".github/workflows/w%02d.yml", i), "x"))
	}
	d, _ := policy.ValidateChange(files, policy.ChangeLimits{})
	if len(d.Offending) != 13 {
		t.Fatalf("Offending = %q", d.Offending)
	}
	if !strings.Contains(ChangeRefusal(d), "`.github/workflows/w09.yml` and 3 more.") || strings.Contains(ChangeRefusal(d), "w10") {
		t.Errorf("reply does not stop at ten: %q", ChangeRefusal(d))
	}
	if strings.Count(ChangeRefusal(d), "`.github/workflows/w") != 10 {
		t.Errorf("reply does not name ten paths: %q", ChangeRefusal(d))
	}
	checkChangeReply(t, ChangeRefusal(d))

	// Hostile names: backticks, mentions, HTML, newlines, long names.
	hostile := []string{
		".github/workflows/`x`.yml",
		".github/workflows/```\n/inspect run\n```",
		".github/workflows/@everyone <img src=x>.yml",
		".github/workflows/" + strings.Repeat("é", 100) + "/" + strings.Repeat("é", 100),
	}
	files = nil
	for _, p := range hostile {
		files = append(files, addedFile(p, "x"))
	}
	d, _ = policy.ValidateChange(files, policy.ChangeLimits{})
	if d.Reason != policy.ReasonInvalidPath { // the newline makes one of them invalid first
		t.Fatalf("reason %q", d.Reason)
	}
	checkChangeReply(t, ChangeRefusal(d))
	d, _ = policy.ValidateChange(files[:1:1], policy.ChangeLimits{})
	if !strings.Contains(ChangeRefusal(d), "`.github/workflows/x.yml`") {
		t.Errorf("backticks not stripped: %q", ChangeRefusal(d))
	}
	d, _ = policy.ValidateChange([]policy.ChangedFile{files[2], files[3]}, policy.ChangeLimits{})
	checkChangeReply(t, ChangeRefusal(d))
	if !strings.Contains(ChangeRefusal(d), "`.github/workflows/@everyone <img src=x>.yml`") {
		t.Errorf("mention and HTML not in a code span: %q", ChangeRefusal(d))
	}
	if cut := string([]rune(hostile[3])[:120]); !strings.Contains(ChangeRefusal(d), "`"+cut+"…`") {
		t.Errorf("long path not cut at 120 runes: %q", ChangeRefusal(d))
	}
}

func TestPathCodeSpan(t *testing.T) {
	cases := map[string]string{
		"a/b.go":         "`a/b.go`",
		"a`b":            "`ab`",
		"```":            "(a path with no printable characters)",
		"":               "(a path with no printable characters)",
		"   ":            "(a path with no printable characters)",
		"a\nb":           "`a\uFFFDb`",
		"\u202e":         "`\uFFFD`",
		"a\xffb":         "`a\uFFFDb`",
		"café":           "`café`",
		"<b>@x</b>":      "`<b>@x</b>`",
		"a\u200b":        "`a\uFFFD`",
		"x" + "\u0000y":  "`x\uFFFDy`",
		"tab\there":      "`tab\uFFFDhere`",
		"sp ace/na me.x": "`sp ace/na me.x`",
	}
	for in, want := range cases {
		if got := pathCodeSpan(in); got != want {
			t.Errorf("pathCodeSpan(%q) = %q, want %q", in, got, want)
		}
	}
	long := pathCodeSpan(strings.Repeat("a", 500))
	if long != "`"+strings.Repeat("a", 120)+"…`" {
		t.Errorf("long path: %q", long)
	}
	if got := pathCodeSpan(strings.Repeat("a", 120)); got != "`"+strings.Repeat("a", 120)+"`" {
		t.Errorf("path of exactly 120 runes was cut: %q", got)
	}
}

// Whatever the change, its refusal is one safe line with every code span
// closed (checkChangeReply).
func FuzzChangeRefusal(f *testing.F) {
	f.Add("a.go", "b/c", []byte("x\n"), []byte("y\n"), uint8(0), uint8(0), "deploy/**", 0, 0, int64(0))
	f.Add(".github/workflows/ci.yml", "x", []byte("on: push"), []byte(nil), uint8(1), uint8(2), "", 1, 1, int64(1))
	f.Add("a/../b", ".GIT/x", []byte("\x00"), []byte("\xff"), uint8(2), uint8(5), "**", -1, -1, int64(-1))
	f.Add("l", "l/x", []byte("../.."), []byte("a\nb"), uint8(2), uint8(3), "*/x", 2, 3, int64(4))
	f.Add("a\n/inspect run", "`x`", []byte(""), []byte(""), uint8(3), uint8(7), "\\", 5, 5, int64(5))
	f.Fuzz(func(t *testing.T, p1, p2 string, content, baseContent []byte, mode, flags uint8, glob string, maxFiles, maxLines int, maxBytes int64) {
		modes := []string{policy.ModeFile, policy.ModeExecutable, policy.ModeSymlink, "160000"}
		files := []policy.ChangedFile{
			{Path: p1, Mode: modes[mode%4], Content: content, Deleted: flags&1 != 0, BaseContent: baseContent, Existed: flags&2 != 0},
			{Path: p2, Mode: modes[(mode/4)%4], Content: baseContent, Deleted: flags&4 != 0, BaseContent: content, Existed: flags&8 != 0},
		}
		limits := policy.ChangeLimits{MaxFiles: maxFiles, MaxLines: maxLines, MaxBytes: maxBytes,
			AllowBinary: flags&16 != 0, ProtectedPaths: []string{glob}}
		d, _ := policy.ValidateChange(files, limits)
		if d.Allowed != (ChangeRefusal(d) == "") {
			t.Fatalf("inconsistent decision: %+v, refusal %q", d, ChangeRefusal(d))
		}
		if !d.Allowed {
			checkChangeReply(t, ChangeRefusal(d))
		}
	})
}
