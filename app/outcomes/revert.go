package outcomes

import (
	"regexp"
	"strconv"
	"strings"
)

// revertPR is the first line of the body GitHub's "Revert" button writes
// on the revert PR: "Reverts owner/repo#123".
var revertPR = regexp.MustCompile(`(?m)^Reverts ([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]{1,9})\s*$`)

// revertCommit is the line `git revert` writes in its message:
// "This reverts commit <sha>."
var revertCommit = regexp.MustCompile(`(?m)^This reverts commit ([0-9a-f]{40}|[0-9a-f]{64})\.?\s*$`)

// RevertedPRs are the pull requests of repo (owner/name, matched without
// regard to case) a revert PR's body names as reverted.
func RevertedPRs(body, repo string) []int {
	var out []int
	for _, m := range revertPR.FindAllStringSubmatch(body, 8) {
		if !strings.EqualFold(m[1], repo) {
			continue
		}
		if n, err := strconv.Atoi(m[2]); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// RevertedCommits are the commits a commit message says it reverts.
func RevertedCommits(message string) []string {
	var out []string
	for _, m := range revertCommit.FindAllStringSubmatch(message, 8) {
		out = append(out, m[1])
	}
	return out
}

// FilePatch is one file's part of a commit's patch, as GitHub's commit API
// gives it: the file's name and its unified-diff hunks.
type FilePatch struct {
	Path  string
	Patch string
}

// IsReverse reports whether candidate undoes change: the same files, and
// each file's added lines are the change's removed lines and the other
// way round. It is the third way a revert is found (decision 0074), tried
// only on merged commits touching the same files within the window.
func IsReverse(change, candidate []FilePatch) bool {
	if len(change) == 0 || len(change) != len(candidate) {
		return false
	}
	byPath := map[string]string{}
	for _, f := range candidate {
		byPath[f.Path] = f.Patch
	}
	for _, f := range change {
		p, ok := byPath[f.Path]
		if !ok {
			return false
		}
		addA, delA := patchLines(f.Patch)
		addB, delB := patchLines(p)
		if len(addA)+len(delA) == 0 || !sameLines(addA, delB) || !sameLines(delA, addB) {
			return false
		}
	}
	return true
}

// patchLines are a patch's added and removed lines, without their sign.
func patchLines(patch string) (added, removed []string) {
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			added = append(added, l[1:])
		case strings.HasPrefix(l, "-"):
			removed = append(removed, l[1:])
		}
	}
	return added, removed
}

func sameLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
