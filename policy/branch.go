package policy

import (
	"strings"
	"unicode/utf8"
)

// MaxBranchNameBytes bounds a branch name a person gives (the spec's
// limit for any name).
const MaxBranchNameBytes = 255

// CheckBranchName says why name is not a branch name git would accept as
// refs/heads/<name> (git check-ref-format --branch), or "" when it is one.
// A branch name is untrusted text: this is checked before it is sent to
// GitHub, put in a spec or shown, and the reasons never repeat the name.
func CheckBranchName(name string) string {
	switch {
	case name == "":
		return "a branch name is required"
	case len(name) > MaxBranchNameBytes:
		return "a branch name must be at most 255 bytes"
	case !utf8.ValidString(name):
		return "a branch name must be valid UTF-8"
	case strings.HasPrefix(name, "-"):
		return "a branch name must not start with '-'"
	case name == "HEAD" || name == "@":
		return "HEAD and @ are not branch names"
	case strings.HasPrefix(name, "refs/"):
		return "give the branch's name without refs/ (such as feature/login)"
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return "a branch name must not contain control characters"
		}
		if IsHidden(r) {
			// git takes it, but a person reading the name would not see it
			// (a bidi override can make one branch look like another).
			return "a branch name must not contain invisible characters"
		}
		if strings.ContainsRune(" ~^:?*[\\", r) {
			return "a branch name must not contain spaces or any of ~ ^ : ? * [ \\"
		}
	}
	switch {
	case strings.Contains(name, ".."):
		return "a branch name must not contain '..'"
	case strings.Contains(name, "@{"):
		return "a branch name must not contain '@{'"
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return "a branch name must not start or end with '/' or contain '//'"
	case strings.HasSuffix(name, "."):
		return "a branch name must not end with '.'"
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return "no part of a branch name may start with '.' or end with '.lock'"
		}
	}
	return ""
}
