package supervisor

import (
	"context"
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// trackedCacheError is a workspace cache that holds files the repository
// tracks: the repo's config is wrong for this commit, not the supervisor.
type trackedCacheError struct{ msg string }

func (e *trackedCacheError) Error() string { return e.msg }

// maxTrackedListing bounds what is read of a cache's tracked entries: the
// first few name it.
const maxTrackedListing = 4 << 10

// refuseTrackedCaches refuses a cache inside /workspace that holds files
// the repository tracks at sha (a *trackedCacheError). A workspace cache
// is setup's: it is restored over the checkout and left out of the change
// whole (workspaceCaches), so the agent's edits to tracked files there
// would be lost from its change without a word, and verify would run on
// setup's copies of them. A cache of tracked files is no cache, so the
// build and the session refuse it, naming it, rather than guess whose
// each file is (decision 0061). The cache path itself as a tracked file
// or symlink is left to the real-directory checks, which name it so.
func refuseTrackedCaches(ctx context.Context, g *git, w *workspace, sha string, caches []contract.Cache) error {
	for i, c := range caches {
		rel, ok := inWorkspace(c.Path)
		if !ok {
			continue
		}
		// With the trailing slash ls-tree lists what is inside rel (no
		// pattern matching: a path is a prefix), and nothing for a file.
		out, more, err := w.privatePrefix(ctx, g, maxTrackedListing, "ls-tree", "-z", "--name-only", sha, "--", rel+"/")
		if err != nil {
			return fmt.Errorf("listing the tracked files under %s: %w", c.Path, err)
		}
		var names []string
		for n := range strings.SplitSeq(string(out), "\x00") {
			if strings.HasPrefix(n, rel+"/") && len(names) < 3 {
				names = append(names, fmt.Sprintf("%q", n))
			}
		}
		if len(names) == 0 {
			continue
		}
		if more || strings.Count(string(out), "\x00") > len(names) {
			names = append(names, "…")
		}
		return &trackedCacheError{fmt.Sprintf("snapshot.caches[%d].path %s holds files the repository tracks at %s (%s): "+
			"a cache is setup's and never part of the change, so the agent's edits there would be lost; "+
			"cache a directory the repository does not track (list it in .gitignore), or stop declaring it a cache",
			i, c.Path, snapshotShortSHA(sha), contract.CleanProgressMessage(strings.Join(names, ", ")))}
	}
	return nil
}
