package fakegithub

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/inspecthq/inspect/internal/standin"
)

// GET /repos/{owner}/{repo}/compare/{basehead}: two commits of the repo
// compared, read from its git repository as GitHub documents it.
//
//   - basehead is "BASE...HEAD"; each side is a branch, a tag or a commit
//     SHA (full or abbreviated) of the repo, optionally "OWNER:" the
//     repo's owner. A side that names nothing, another owner's fork (the
//     stand-in has no networks), or a basehead without "..." is 404 "Not
//     Found"; two commits without a common ancestor are 404 "No common
//     ancestor between BASE and HEAD.", as GitHub words it.
//   - ahead_by counts the commits of HEAD that BASE lacks (git rev-list
//     BASE..HEAD, total_commits too), behind_by the converse; status is
//     identical, ahead, behind or diverged.
//   - commits are HEAD's new commits oldest first. Without page or
//     per_page, the last 250 of them; with either, one page (per_page
//     defaults to 30, at most 100) and a Link header.
//   - files are the changes from the merge base to HEAD (what GitHub's
//     three-dot diff shows), on the first page only, at most 300; renames
//     are shown as a removal and an addition (git --no-renames), and
//     there is no patch.
//   - base_commit and merge_base_commit are the REST commit objects.

const (
	docsCompare = "https://docs.github.com/rest/commits/commits#compare-two-commits"
	// compareUnpaged is how many commits a comparison lists without a page
	// parameter; compareFiles how many files it lists at most.
	compareUnpaged = 250
	compareFiles   = 300
)

func (s *Server) compareRoutes() {
	// {basehead...}: a branch name may hold slashes.
	s.handle("GET /repos/{owner}/{repo}/compare/{basehead...}", docsCompare, repoGate("contents"), s.compare)
}

// compareSide resolves one side of a basehead to a commit of r.
func (s *Server) compareSide(r *repoState, side string) (string, bool) {
	if owner, ref, ok := strings.Cut(side, ":"); ok {
		if !strings.EqualFold(owner, r.Owner) {
			return "", false
		}
		side = ref
	}
	if side == "" {
		return "", false
	}
	return s.resolveCommit(r, side)
}

func (s *Server) compare(c *call) response {
	r := c.repo
	baseRef, headRef, ok := strings.Cut(c.r.PathValue("basehead"), "...")
	if !ok {
		return notFound(c.doc)
	}
	base, okBase := s.compareSide(r, baseRef)
	head, okHead := s.compareSide(r, headRef)
	if !okBase || !okHead {
		return notFound(c.doc)
	}
	out, err := s.git(r, nil, nil, "merge-base", base, head)
	if exitCode(err) == 1 {
		return errResp(http.StatusNotFound, fmt.Sprintf("No common ancestor between %s and %s.", baseRef, headRef), c.doc)
	}
	if err != nil {
		return gitFailure(err)
	}
	mergeBase := strings.TrimSpace(string(out))
	ahead, err := s.revList(r, base, head)
	if err != nil {
		return gitFailure(err)
	}
	behind, err := s.revList(r, head, base)
	if err != nil {
		return gitFailure(err)
	}
	status := "diverged"
	switch {
	case len(ahead) == 0 && len(behind) == 0:
		status = "identical"
	case len(behind) == 0:
		status = "ahead"
	case len(ahead) == 0:
		status = "behind"
	}

	q := c.r.URL.Query()
	paged := q.Has("page") || q.Has("per_page")
	listed, firstPage := ahead, true
	var header http.Header
	if paged {
		var lo, hi int
		lo, hi, header = standin.Paginate(c.r, c.origPath, len(ahead))
		listed, firstPage = ahead[lo:hi], lo == 0
	} else if len(ahead) > compareUnpaged {
		listed = ahead[len(ahead)-compareUnpaged:]
	}
	commits := make([]map[string]any, 0, len(listed))
	for _, sha := range listed {
		cj, err := s.restCommitJSON(r, sha)
		if err != nil {
			return gitFailure(err)
		}
		commits = append(commits, cj)
	}
	baseJSON, err := s.restCommitJSON(r, base)
	if err != nil {
		return gitFailure(err)
	}
	mergeBaseJSON, err := s.restCommitJSON(r, mergeBase)
	if err != nil {
		return gitFailure(err)
	}
	files := []map[string]any{}
	if firstPage {
		if files, err = s.compareFiles(r, mergeBase, head); err != nil {
			return gitFailure(err)
		}
	}
	basehead := c.r.PathValue("basehead")
	web := fmt.Sprintf("%s/%s/compare/%s", s.URL(), r.fullName(), basehead)
	resp := jsonResp(http.StatusOK, map[string]any{
		"url":               fmt.Sprintf("%srepos/%s/compare/%s", s.APIURL(), r.fullName(), basehead),
		"html_url":          web,
		"permalink_url":     fmt.Sprintf("%s/%s/compare/%s:%s...%s:%s", s.URL(), r.fullName(), r.Owner, base[:7], r.Owner, head[:7]),
		"diff_url":          web + ".diff",
		"patch_url":         web + ".patch",
		"base_commit":       baseJSON,
		"merge_base_commit": mergeBaseJSON,
		"status":            status,
		"ahead_by":          len(ahead),
		"behind_by":         len(behind),
		"total_commits":     len(ahead),
		"commits":           commits,
		"files":             files,
	})
	resp.header = header
	return resp
}

// revList is the commits of to that from lacks, oldest first (as the
// comparison lists them). Callers hold s.mu.
func (s *Server) revList(r *repoState, from, to string) ([]string, error) {
	out, err := s.git(r, nil, nil, "rev-list", "--reverse", "--topo-order", from+".."+to)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// compareFiles is the diff from a to b as a comparison's files. Callers
// hold s.mu.
func (s *Server) compareFiles(r *repoState, a, b string) ([]map[string]any, error) {
	raw, err := s.git(r, nil, nil, "diff", "--raw", "--no-renames", "-z", "--no-abbrev", a, b)
	if err != nil {
		return nil, err
	}
	num, err := s.git(r, nil, nil, "diff", "--numstat", "--no-renames", "-z", a, b)
	if err != nil {
		return nil, err
	}
	// --numstat -z: "ADDED\tDELETED\tPATH\0" ("-" for a binary file).
	counts := map[string][2]int{}
	for _, rec := range bytes.Split(bytes.TrimSuffix(num, []byte{0}), []byte{0}) {
		parts := strings.SplitN(string(rec), "\t", 3)
		if len(parts) != 3 {
			continue
		}
		add, _ := strconv.Atoi(parts[0]) // "-" (binary) counts none, as GitHub's 0
		del, _ := strconv.Atoi(parts[1])
		counts[parts[2]] = [2]int{add, del}
	}
	// --raw -z: ":OLDMODE NEWMODE OLDSHA NEWSHA STATUS\0PATH\0".
	fields := bytes.Split(bytes.TrimSuffix(raw, []byte{0}), []byte{0})
	files := []map[string]any{}
	for i := 0; i+1 < len(fields) && len(files) < compareFiles; i += 2 {
		meta := strings.Fields(strings.TrimPrefix(string(fields[i]), ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("git diff --raw: %q", fields[i])
		}
		p := string(fields[i+1])
		sha, st := meta[3], "modified"
		switch meta[4] {
		case "A":
			st = "added"
		case "D":
			st, sha = "removed", meta[2]
		case "T":
			st = "changed"
		}
		n := counts[p]
		ref := b
		if st == "removed" {
			ref = a
		}
		esc := (&url.URL{Path: p}).EscapedPath()
		files = append(files, map[string]any{
			"sha": sha, "filename": p, "status": st,
			"additions": n[0], "deletions": n[1], "changes": n[0] + n[1],
			"blob_url":     fmt.Sprintf("%s/%s/blob/%s/%s", s.URL(), r.fullName(), ref, esc),
			"raw_url":      fmt.Sprintf("%s/%s/raw/%s/%s", s.URL(), r.fullName(), ref, esc),
			"contents_url": fmt.Sprintf("%srepos/%s/contents/%s?ref=%s", s.APIURL(), r.fullName(), esc, ref),
		})
	}
	return files, nil
}
