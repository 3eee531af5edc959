package web

import (
	"strconv"
	"strings"
)

// The session page shows an attempt's diff (store.Diff) file by file,
// each line classed by what it is, so the CSS colours it: no script, and
// every line, path included, reaches the page only through html/template.
// The patch is untrusted text, but its shape is git's: every line inside
// a hunk starts with ' ', '+', '-' or '\', so no file's content can begin
// a line "diff --git " or "@@", and the parse below cannot be steered
// from inside a file.

// diffView is an attempt's diff as the page shows it.
type diffView struct {
	Files []diffFile
	// Truncated says the patch was cut; Cap is the cut, in words.
	Truncated bool
	Cap       string
}

// diffFile is one file's section of the patch.
type diffFile struct {
	Path  string
	Lines []diffLine
}

// diffLine is one line of a file's section and its class: "meta" (the
// header: modes, index, ---/+++, "Binary files … differ", "\ No newline
// at end of file"), "hunk" (@@), "add", "del" or "ctx".
type diffLine struct {
	Class, Text string
}

// parseDiff splits a unified patch into files and classes its lines. Text
// before the first file header (there is none in git's output) becomes a
// file without a path rather than being dropped.
func parseDiff(patch string) []diffFile {
	var files []diffFile
	inHunk := false
	for _, line := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
			files = append(files, diffFile{Path: diffPath(rest)})
			inHunk = false
			continue
		}
		if len(files) == 0 {
			files = append(files, diffFile{})
		}
		class := "meta"
		switch {
		case strings.HasPrefix(line, "@@"):
			class, inHunk = "hunk", true
		case !inHunk || line == "":
		case line[0] == '+':
			class = "add"
		case line[0] == '-':
			class = "del"
		case line[0] == ' ':
			class = "ctx"
		}
		f := &files[len(files)-1]
		f.Lines = append(f.Lines, diffLine{Class: class, Text: line})
	}
	return files
}

// diffPath reads the path from what follows "diff --git ": "a/P b/P",
// both sides the same since renames are off, or both C-quoted by git
// when P holds a quote, a backslash or a control character. What does not
// parse is shown as it is.
func diffPath(rest string) string {
	if strings.HasPrefix(rest, `"`) {
		end := 1
		for end < len(rest) && rest[end] != '"' {
			if rest[end] == '\\' {
				end++
			}
			end++
		}
		if end < len(rest) {
			if p, err := strconv.Unquote(rest[:end+1]); err == nil {
				if p, ok := strings.CutPrefix(p, "a/"); ok {
					return p
				}
			}
		}
		return rest
	}
	if n := (len(rest) - len("a/ b/")) / 2; n > 0 && len(rest) == 2*n+len("a/ b/") &&
		rest[:2] == "a/" && rest[2+n:5+n] == " b/" && rest[2:2+n] == rest[5+n:] {
		return rest[2 : 2+n]
	}
	return rest
}
