package policy

// IsFork reports whether a pull request comes from a fork, by the full
// names ("owner/name") of its head and base repositories: they differ,
// ignoring ASCII case, or the head's is empty, which means the fork was
// deleted and counts as one. A fork's branch is not Inspect's to push to,
// and its code is not the repository's to run unless the server opts the
// repository in (Authorize); repairs never run on one (DecideRepair).
func IsFork(headRepoFullName, baseRepoFullName string) bool {
	return headRepoFullName == "" || !asciiEqualFold(headRepoFullName, baseRepoFullName)
}

// IsForkByID reports whether a pull request comes from a fork, by the ids
// of its head and base repositories, as check events name them. Unlike
// IsFork, an unknown head (id 0) does not count as a fork: the check
// event's filter errs on the side of accepting, and the worker, which
// reads the pull request itself, decides with IsFork.
func IsForkByID(headRepoID, baseRepoID int64) bool {
	return headRepoID != 0 && headRepoID != baseRepoID
}

// AllForks reports whether a check event's pull requests are all from
// forks (IsForkByID), so that no repair can come of it and the event can
// be dropped in the request. repos gives one pull request's head and base
// repository ids. An event that names no pull request (a commit status,
// or a check on a branch the worker must look up) is not all forks.
func AllForks[P any](prs []P, repos func(P) (headRepoID, baseRepoID int64)) bool {
	if len(prs) == 0 {
		return false
	}
	for _, p := range prs {
		if !IsForkByID(repos(p)) {
			return false
		}
	}
	return true
}
