package policy

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The file modes a change may write, as in a git tree.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
)

// ChangedFile is one entry of the change manifest, with what the app knows
// of the same path at the pinned base commit.
type ChangedFile struct {
	Path string // repository-relative, "/" between directories
	// Mode is ModeFile, ModeExecutable or ModeSymlink; ignored when Deleted.
	Mode string
	// Content is the new content (a symbolic link's target); ignored when
	// Deleted.
	Content []byte
	Deleted bool
	// BaseContent is the content at the base commit, and is only read when
	// Existed is true (nil then means an empty file).
	BaseContent []byte
	Existed     bool // the path was a file at the base commit
}

// ChangeLimits bounds a change. A zero or negative number means no limit.
type ChangeLimits struct {
	MaxFiles    int   // manifest entries, deletions included
	MaxLines    int   // lines added plus lines removed, as ChangeSummary counts them
	MaxBytes    int64 // bytes written: the total size of every new content
	AllowBinary bool
	// ProtectedPaths are globs (see MatchGlob) checked on top of
	// ProtectedPathsFor(Repo), which no configuration can remove.
	ProtectedPaths []string
	// Repo is the name (without its owner) of the repository the change
	// is for: in the owner's OrgConfigRepo more paths are protected
	// (ProtectedPathsFor).
	Repo string
}

// Reasons for refusing a change. Like the other Reason codes they are
// stable: the app records them and may branch on them.
const (
	ReasonInvalidPath   Reason = "invalid_path"
	ReasonProtectedPath Reason = "protected_path"
	ReasonBinaryFile    Reason = "binary_file"
	ReasonTooManyFiles  Reason = "too_many_files"
	ReasonTooLarge      Reason = "too_large"
	ReasonTooManyLines  Reason = "too_many_lines"
)

// ChangeDecision is ValidateChange's answer. When Allowed is false, Reason
// says why and the other fields are the facts the refusal's words are
// made of (app/render.ChangeRefusal writes them, decision 0047).
//
// Offending holds the manifest paths behind the refusal, raw and without
// duplicates, in manifest order; for too_large and too_many_lines, the
// files that contribute, largest first; for too_many_files, nothing. The
// paths come from the agent: escape them before showing them anywhere.
type ChangeDecision struct {
	Allowed   bool
	Reason    Reason
	Offending []string
	// Faults is, for invalid_path, what is wrong with each Offending path
	// (the same length and order); for protected_path, the same length,
	// with a FaultLinkToProtected for each symbolic link that is refused
	// for where it points, and zero PathFaults for the others.
	Faults []PathFault
	// Protected is, for protected_path, the protected patterns the change
	// touches, as a reader knows them ("deploy/" for "deploy/**").
	Protected []string
	// Measured is the change's files (too_many_files), bytes (too_large)
	// or changed lines (too_many_lines), and Limit the limit it is over.
	Measured, Limit int64
	// LinesAdded and LinesRemoved make up Measured for too_many_lines.
	LinesAdded, LinesRemoved int
}

// FaultKind is what is wrong with one path of a change, or with where a
// symbolic link points.
type FaultKind string

// The faults of an invalid_path refusal, and the one of a protected_path
// refusal (FaultLinkToProtected).
const (
	FaultDuplicate        FaultKind = "duplicate"            // listed more than once
	FaultFileAndDirectory FaultKind = "file_and_directory"   // written both as a file and as a directory
	FaultInsideFile       FaultKind = "inside_file"          // written inside a path also written as a file
	FaultEmpty            FaultKind = "empty"                // the path is ""
	FaultTooLong          FaultKind = "too_long"             // longer than Limit bytes
	FaultNotUTF8          FaultKind = "not_utf8"             // not valid UTF-8
	FaultHiddenCharacters FaultKind = "hidden_characters"    // control or invisible characters
	FaultBackslash        FaultKind = "backslash"            // has a backslash
	FaultAbsolute         FaultKind = "absolute"             // starts with "/"
	FaultTrailingSlash    FaultKind = "trailing_slash"       // ends with "/"
	FaultEmptyComponent   FaultKind = "empty_component"      // "a//b"
	FaultDotComponent     FaultKind = "dot_component"        // a Name ("." or "..") component
	FaultLongComponent    FaultKind = "long_component"       // a component longer than Limit bytes
	FaultDotGit           FaultKind = "dot_git"              // a .git component, in any of its spellings
	FaultUnsupportedMode  FaultKind = "unsupported_mode"     // a file mode other than file, executable, link
	FaultLinkEmpty        FaultKind = "link_empty"           // a symbolic link with an empty target
	FaultLinkTooLong      FaultKind = "link_too_long"        // a link target longer than Limit bytes
	FaultLinkUnreadable   FaultKind = "link_unreadable"      // a link target not UTF-8 or with hidden characters
	FaultLinkBackslash    FaultKind = "link_backslash"       // a link target with a backslash
	FaultLinkAbsolute     FaultKind = "link_absolute"        // a link to an absolute path
	FaultLinkInPlaceOfGit FaultKind = "link_in_place_of_git" // a link named as git's Name (".gitmodules", …)
	FaultLinkIntoDotGit   FaultKind = "link_into_dot_git"    // a link into .git
	FaultLinkOutside      FaultKind = "link_outside"         // a link out of the repository
	FaultLinkToProtected  FaultKind = "link_to_protected"    // a link to Name, a protected path ("" is the root)
)

// PathFault is one fault, with its facts.
type PathFault struct {
	Kind FaultKind
	// Name is the component (FaultDotComponent), git's file
	// (FaultLinkInPlaceOfGit) or the link's resolved target
	// (FaultLinkToProtected, untrusted).
	Name string
	// Limit is the length limit in bytes (FaultTooLong,
	// FaultLongComponent, FaultLinkTooLong).
	Limit int
}

// FileStatus is what a manifest entry does to its path.
type FileStatus string

const (
	FileAdded    FileStatus = "added"
	FileModified FileStatus = "modified"
	FileDeleted  FileStatus = "deleted"
)

// FileStat is one manifest entry in a ChangeSummary, for a diffstat.
type FileStat struct {
	Path         string
	Status       FileStatus
	LinesAdded   int
	LinesRemoved int
	Bytes        int64 // size of the new content; 0 when deleted
	Binary       bool  // the new content is binary (its lines are not counted)
	Test         bool  // IsTestFile(Path)
}

// ChangeSummary describes a manifest as given, whether or not it is
// allowed; every entry counts once, in manifest order.
//
// Lines are counted per file as a multiset difference, not a real diff:
// a line of the new content that is not matched by an unused equal line of
// the base is added, and each base line left unmatched is removed. A line
// includes its end-of-line, so "x" and "x\n" differ (as in git, where the
// missing newline at the end of a file shows up as a change). This never
// counts more than a minimal line diff would, and counts exactly as much
// when no lines move; lines that only moved count as unchanged. Any content
// a change adds is counted. A file whose old or new content is binary
// has no line counts, as in `git diff --numstat`.
type ChangeSummary struct {
	Added, Modified, Deleted int
	LinesAdded, LinesRemoved int
	Bytes                    int64    // total size of every new content
	TestFiles                []string // changed test files (IsTestFile), deletions included, flagged for reviewers
	Binary                   []string // entries writing binary content, refused or not
	Files                    []FileStat
}

// DefaultProtectedPaths returns the globs that every change is checked
// against whatever the configuration says; ChangeLimits.ProtectedPaths
// only adds to them. It is a function so that the list cannot be changed
// by anyone: each call returns a new slice. The rule is that the agent must
// not rewrite the rules it runs under (its configuration, who reviews it)
// nor the CI that runs with the repository's secrets:
//
//   - `.github/workflows/**`: workflows choose the secrets, token
//     permissions and triggers CI runs with, and pushing the branch runs
//     them before anyone has reviewed the change. (GitHub also refuses such
//     a push from an app without the `workflows` permission.)
//   - `.github/actions/**`: the conventional home of a repository's local
//     actions (`uses: ./.github/actions/x`), which run inside workflows with
//     their secrets. Editing one is editing a workflow, and GitHub's
//     `workflows` permission does not guard them.
//   - `.github/inspect.yml` and `.github/inspect.yaml` (config's
//     RepoConfigPaths): Inspect's repository configuration names the agent,
//     the verify commands, the protected paths and the limits. A session
//     must not loosen them for the sessions after it is merged. (The
//     owner's org-wide copy is protected in its repository:
//     ProtectedPathsFor.)
//   - `CODEOWNERS`, `.github/CODEOWNERS`, `docs/CODEOWNERS` (where GitHub
//     looks): they decide who must approve a change, Inspect's included.
//   - `.buildkite/**`: Inspect's production executor is Buildkite, its
//     snapshot pipeline lives there, and a repository's Buildkite pipelines
//     run on agents that hold secrets, just as workflows do.
//
// Other CI systems' files (`.circleci/`, `Jenkinsfile`, ...) can be added
// by a repository's `protected_paths`.
func DefaultProtectedPaths() []string {
	return []string{
		".github/workflows/**",
		".github/actions/**",
		".github/inspect.yml",
		".github/inspect.yaml",
		"CODEOWNERS",
		".github/CODEOWNERS",
		"docs/CODEOWNERS",
		".buildkite/**",
	}
}

// OrgConfigRepo is the repository whose root holds an owner's org-wide
// configuration: go-githubapp's appconfig reads `inspect.yml` there as the
// default of every repository of the owner without a file of its own.
const OrgConfigRepo = ".github"

// orgConfigPaths are the org-wide config files at OrgConfigRepo's root: the
// repository config paths (`.github/inspect.y*ml`) without their `.github/`,
// as appconfig reads them.
var orgConfigPaths = [...]string{"inspect.yml", "inspect.yaml"}

// IsOrgConfigRepo reports whether a repository name (without its owner) is
// OrgConfigRepo. GitHub's repository names ignore ASCII case, and so does
// the lookup appconfig makes.
func IsOrgConfigRepo(name string) bool { return asciiEqualFold(name, OrgConfigRepo) }

// ProtectedPathsFor returns the globs every change to the named repository
// is checked against, whatever its configuration says: DefaultProtectedPaths
// and, in the owner's OrgConfigRepo, the org-wide config at its root. The
// rule is DefaultProtectedPaths': a session in the `.github` repository
// must not rewrite the configuration every other repository of the owner
// runs under. Each call returns a new slice.
func ProtectedPathsFor(repo string) []string {
	paths := DefaultProtectedPaths()
	if IsOrgConfigRepo(repo) {
		paths = append(paths, orgConfigPaths[:]...)
	}
	return paths
}

// Path and target length limits. Git has none, but checkouts fail past
// the usual PATH_MAX and NAME_MAX, and reviewers cannot read such paths.
const (
	maxPathBytes      = 4096
	maxComponentBytes = 255
)

// ValidateChange checks a change manifest against the limits, and
// describes it. It never changes its arguments. An empty manifest is
// allowed (it is the caller's no_change).
//
// These rules apply, and the first that fails gives the reason:
//
//  1. invalid_path: every path must be one git would put in a tree and
//     check out safely: not empty, valid UTF-8, no control or invisible
//     characters (a reviewer must be able to read what changed), no
//     backslash (a separator on Windows, refused by git's protectNTFS), not
//     absolute, no empty, "." or ".." component, no `.git` component in any
//     case (nor its NTFS forms `.git.`, `.git::$DATA`, `git~1`), at most
//     4096 bytes and 255 per component. No path may be listed twice, nor be
//     written both as a file and as a directory. A written entry must have
//     one of the three modes; a symbolic link must have a relative target
//     that stays inside the repository (resolved lexically from the link's
//     directory, without following other links), does not go through
//     `.git`, and must not stand in for `.gitmodules`, `.gitattributes`,
//     `.gitignore` or `.mailmap`, which git refuses as links.
//  2. protected_path: no entry (added, modified or deleted; a rename is a
//     deletion plus an addition, so both of its paths count) may match a
//     protected glob (ProtectedPathsFor(limits.Repo), then the limits'), nor sit on a directory that a glob names before its
//     first `**` (writing or deleting `.github` would replace or remove
//     `.github/workflows`), and no symbolic link may point at such a path.
//     Protected globs are matched ignoring ASCII case: `.GitHub/Workflows`
//     is the same directory on case-insensitive file systems, and a false
//     refusal costs a person one edit where a false pass costs the
//     protection.
//  3. binary_file, unless AllowBinary: content with a NUL byte in its first
//     8000 bytes (git's test) or that is not valid UTF-8.
//  4. too_many_files, 5. too_large (bytes written), 6. too_many_lines.
//
// Why this order: paths come first because nothing else is meaningful
// until they are canonical (a glob can be dodged by `./.github/...` or
// `.github//workflows/...`). Protected paths come next because they are the
// most serious breach and their remedy differs from all the others: a
// person must make that edit, and a smaller change would still be refused.
// Binary files are a property of single files with a remedy of their own,
// and their lines are not counted, so a size refusal first would mislead.
// The three size limits last, from the cheapest and broadest (files) to
// the most approximate (lines), since "ask for a smaller change" is the
// remedy for all three and the clearest measure should be the one quoted.
func ValidateChange(files []ChangedFile, limits ChangeLimits) (ChangeDecision, ChangeSummary) {
	sum := summarize(files)
	if d, ok := checkPaths(files); !ok {
		return d, sum
	}
	if d, ok := checkProtected(files, append(ProtectedPathsFor(limits.Repo), limits.ProtectedPaths...)); !ok {
		return d, sum
	}
	if !limits.AllowBinary && len(sum.Binary) > 0 {
		return ChangeDecision{Reason: ReasonBinaryFile, Offending: dedupe(sum.Binary)}, sum
	}
	if limits.MaxFiles > 0 && len(files) > limits.MaxFiles {
		return ChangeDecision{Reason: ReasonTooManyFiles, Measured: int64(len(files)), Limit: int64(limits.MaxFiles)}, sum
	}
	if limits.MaxBytes > 0 && sum.Bytes > limits.MaxBytes {
		paths := biggest(sum.Files, func(f FileStat) int64 { return f.Bytes })
		return ChangeDecision{Reason: ReasonTooLarge, Offending: paths, Measured: sum.Bytes, Limit: limits.MaxBytes}, sum
	}
	if lines := sum.LinesAdded + sum.LinesRemoved; limits.MaxLines > 0 && lines > limits.MaxLines {
		paths := biggest(sum.Files, func(f FileStat) int64 { return int64(f.LinesAdded) + int64(f.LinesRemoved) })
		return ChangeDecision{Reason: ReasonTooManyLines, Offending: paths, Measured: int64(lines), Limit: int64(limits.MaxLines),
			LinesAdded: sum.LinesAdded, LinesRemoved: sum.LinesRemoved}, sum
	}
	return ChangeDecision{Allowed: true}, sum
}

func summarize(files []ChangedFile) ChangeSummary {
	sum := ChangeSummary{Files: make([]FileStat, 0, len(files))}
	for _, f := range files {
		st := FileStat{Path: f.Path, Test: IsTestFile(f.Path)}
		var before, after []byte
		switch {
		case f.Deleted:
			st.Status = FileDeleted
			sum.Deleted++
		case f.Existed:
			st.Status = FileModified
			sum.Modified++
		default:
			st.Status = FileAdded
			sum.Added++
		}
		if f.Existed {
			before = f.BaseContent
		}
		if !f.Deleted {
			after = f.Content
			st.Bytes = int64(len(after))
			st.Binary = f.Mode != ModeSymlink && isBinaryContent(after)
		}
		if !st.Binary && !isBinaryContent(before) {
			st.LinesAdded, st.LinesRemoved = lineDiff(before, after)
		}
		sum.LinesAdded += st.LinesAdded
		sum.LinesRemoved += st.LinesRemoved
		sum.Bytes += st.Bytes
		if st.Test {
			sum.TestFiles = append(sum.TestFiles, f.Path)
		}
		if st.Binary {
			sum.Binary = append(sum.Binary, f.Path)
		}
		sum.Files = append(sum.Files, st)
	}
	return sum
}

// checkPaths applies rule 1.
func checkPaths(files []ChangedFile) (ChangeDecision, bool) {
	var bad []string
	var faults []PathFault
	flagged := map[string]bool{}
	flag := func(p string, f PathFault) {
		if !flagged[p] {
			flagged[p] = true
			bad = append(bad, p)
			faults = append(faults, f)
		}
	}
	seen := make(map[string]bool, len(files))
	written := make(map[string]bool, len(files))
	for _, f := range files {
		if seen[f.Path] {
			flag(f.Path, PathFault{Kind: FaultDuplicate})
			continue
		}
		seen[f.Path] = true
		if fault := entryFault(f); fault.Kind != "" {
			flag(f.Path, fault)
			continue
		}
		if !f.Deleted {
			written[f.Path] = true
		}
	}
	// A written path whose parent directory is also written as a file
	// cannot be one tree.
	for _, f := range files {
		if f.Deleted || !written[f.Path] {
			continue
		}
		for i := 0; i < len(f.Path); i++ {
			if f.Path[i] == '/' && written[f.Path[:i]] {
				flag(f.Path[:i], PathFault{Kind: FaultFileAndDirectory})
				flag(f.Path, PathFault{Kind: FaultInsideFile})
			}
		}
	}
	if len(bad) == 0 {
		return ChangeDecision{}, true
	}
	return ChangeDecision{Reason: ReasonInvalidPath, Offending: bad, Faults: faults}, false
}

// entryFault says what is wrong with one entry: a zero Kind for nothing.
func entryFault(f ChangedFile) PathFault {
	if fault := pathFault(f.Path); fault.Kind != "" {
		return fault
	}
	if f.Deleted {
		return PathFault{}
	}
	switch f.Mode {
	case ModeFile, ModeExecutable:
		return PathFault{}
	case ModeSymlink:
		return symlinkFault(f.Path, string(f.Content))
	}
	return PathFault{Kind: FaultUnsupportedMode}
}

// pathFault checks a path as git's verify_path does with protectHFS and
// protectNTFS on (plus the length limits), and says what is wrong.
func pathFault(p string) PathFault {
	switch {
	case p == "":
		return PathFault{Kind: FaultEmpty}
	case len(p) > maxPathBytes:
		return PathFault{Kind: FaultTooLong, Limit: maxPathBytes}
	case !utf8.ValidString(p):
		return PathFault{Kind: FaultNotUTF8}
	case strings.IndexFunc(p, IsHiddenInLine) >= 0:
		return PathFault{Kind: FaultHiddenCharacters}
	case strings.Contains(p, `\`):
		return PathFault{Kind: FaultBackslash}
	case p[0] == '/':
		return PathFault{Kind: FaultAbsolute}
	case p[len(p)-1] == '/':
		return PathFault{Kind: FaultTrailingSlash}
	}
	for c := range strings.SplitSeq(p, "/") {
		if fault := componentFault(c); fault.Kind != "" {
			return fault
		}
	}
	return PathFault{}
}

func componentFault(c string) PathFault {
	switch {
	case c == "":
		return PathFault{Kind: FaultEmptyComponent}
	case c == "." || c == "..":
		return PathFault{Kind: FaultDotComponent, Name: c}
	case len(c) > maxComponentBytes:
		return PathFault{Kind: FaultLongComponent, Limit: maxComponentBytes}
	case isDotGit(c):
		return PathFault{Kind: FaultDotGit}
	}
	return PathFault{}
}

// isDotGit reports whether a path component names the `.git` directory on
// some file system: in any ASCII case (macOS, Windows), with trailing dots
// or spaces or an NTFS stream suffix (`.git.`, `.git::$INDEX_ALLOCATION`),
// or as its NTFS short name `git~1`. (The HFS+ forms with ignorable code
// points, such as `.g\u200cit`, are refused earlier as invisible
// characters.)
func isDotGit(c string) bool {
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	c = strings.TrimRight(c, ". ")
	return asciiEqualFold(c, ".git") || asciiEqualFold(c, "git~1")
}

// gitLinkRefused are names git refuses as symbolic links (fsck, and
// checkout since git 2.32), because git itself reads them from the work
// tree.
var gitLinkRefused = [...]string{".gitmodules", ".gitattributes", ".gitignore", ".mailmap"}

// symlinkFault checks a symbolic link's target.
func symlinkFault(link, target string) PathFault {
	switch {
	case target == "":
		return PathFault{Kind: FaultLinkEmpty}
	case len(target) > maxPathBytes:
		return PathFault{Kind: FaultLinkTooLong, Limit: maxPathBytes}
	case !utf8.ValidString(target) || strings.IndexFunc(target, IsHiddenInLine) >= 0:
		return PathFault{Kind: FaultLinkUnreadable}
	case strings.Contains(target, `\`):
		return PathFault{Kind: FaultLinkBackslash}
	case target[0] == '/':
		return PathFault{Kind: FaultLinkAbsolute}
	}
	name := link[strings.LastIndexByte(link, '/')+1:]
	for _, n := range gitLinkRefused {
		if asciiEqualFold(strings.TrimRight(name, ". "), n) {
			return PathFault{Kind: FaultLinkInPlaceOfGit, Name: n}
		}
	}
	for c := range strings.SplitSeq(target, "/") {
		if c != "." && c != ".." && isDotGit(c) {
			return PathFault{Kind: FaultLinkIntoDotGit}
		}
	}
	if _, ok := resolveLink(link, target); !ok {
		return PathFault{Kind: FaultLinkOutside}
	}
	return PathFault{}
}

// resolveLink resolves a relative link target lexically, from the link's
// directory, to a repository path ("" for the root). It fails when the
// target climbs above the root.
func resolveLink(link, target string) (string, bool) {
	var stack []string
	if i := strings.LastIndexByte(link, '/'); i >= 0 {
		stack = strings.Split(link[:i], "/")
	}
	for c := range strings.SplitSeq(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				return "", false
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, c)
		}
	}
	return strings.Join(stack, "/"), true
}

// protectedGlob is a protected pattern ready to match, folded to lower
// ASCII case.
type protectedGlob struct {
	shown string // as a reader knows it (ChangeDecision.Protected)
	segs  []string
}

func compileProtected(globs []string) []protectedGlob {
	var out []protectedGlob
	for _, p := range globs {
		segs, ok := globSegs(asciiLower(p))
		if !ok {
			continue
		}
		shown := strings.TrimPrefix(p, "/")
		if s, ok := strings.CutSuffix(shown, "/**"); ok && s != "" {
			shown = s + "/"
		}
		out = append(out, protectedGlob{shown: shown, segs: segs})
	}
	return out
}

// touches reports whether a path, as lower-case segments (none for the
// root), matches the glob or is a directory on its way.
func (g protectedGlob) touches(segs []string) bool {
	return (len(segs) > 0 && matchSegs(g.segs, segs)) || globDirOnPath(g.segs, segs)
}

// checkProtected applies rule 2 with every protected glob. Paths are valid
// by now.
func checkProtected(files []ChangedFile, protected []string) (ChangeDecision, bool) {
	globs := compileProtected(protected)
	var bad, patterns []string
	var faults []PathFault
	for _, f := range files {
		var fault PathFault
		g := firstTouched(globs, f.Path)
		if g == nil && !f.Deleted && f.Mode == ModeSymlink {
			to, _ := resolveLink(f.Path, string(f.Content))
			if g = firstTouched(globs, to); g != nil {
				fault = PathFault{Kind: FaultLinkToProtected, Name: to}
			}
		}
		if g == nil {
			continue
		}
		bad = append(bad, f.Path)
		faults = append(faults, fault)
		if !slices.Contains(patterns, g.shown) {
			patterns = append(patterns, g.shown)
		}
	}
	if len(bad) == 0 {
		return ChangeDecision{}, true
	}
	return ChangeDecision{Reason: ReasonProtectedPath, Offending: bad, Faults: faults, Protected: patterns}, false
}

// firstTouched returns the first glob that a valid path (or "" for the
// root) touches, or nil.
func firstTouched(globs []protectedGlob, path string) *protectedGlob {
	var segs []string
	if path != "" {
		segs = strings.Split(asciiLower(path), "/")
	}
	for i := range globs {
		if globs[i].touches(segs) {
			return &globs[i]
		}
	}
	return nil
}

// isBinaryContent: a NUL byte in the first 8000 bytes (git's test), or
// not valid UTF-8.
func isBinaryContent(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 || !utf8.Valid(b)
}

// lineDiff counts added and removed lines as a multiset difference (see
// ChangeSummary). A line includes its "\n"; a last line without one is a
// line too.
func lineDiff(before, after []byte) (added, removed int) {
	switch {
	case bytes.Equal(before, after):
		return 0, 0
	case len(before) == 0:
		return countLines(after), 0
	case len(after) == 0:
		return 0, countLines(before)
	}
	// One string for the whole base, so the keys are substrings of it and
	// indexing costs no allocation per line.
	base := string(before)
	index := map[string]int{}
	var left []int // unmatched count per distinct base line
	for rest := base; rest != ""; {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if k, ok := index[line]; ok {
			left[k]++
		} else {
			index[line] = len(left)
			left = append(left, 1)
		}
	}
	for rest := after; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if k, ok := index[string(line)]; ok && left[k] > 0 {
			left[k]--
		} else {
			added++
		}
	}
	for _, n := range left {
		removed += n
	}
	return added, removed
}

func countLines(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// biggest returns the paths of the entries with a non-zero size, largest
// first (manifest order among equals), without duplicates.
func biggest(files []FileStat, size func(FileStat) int64) []string {
	var nz []FileStat
	for _, f := range files {
		if size(f) > 0 {
			nz = append(nz, f)
		}
	}
	slices.SortStableFunc(nz, func(a, b FileStat) int { return cmp.Compare(size(b), size(a)) })
	paths := make([]string, len(nz))
	for i, f := range nz {
		paths[i] = f.Path
	}
	return dedupe(paths)
}

func dedupe(paths []string) []string {
	out := make([]string, 0, len(paths))
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
