package policy

import "strings"

// FailingConclusion reports whether a check run's or check suite's
// conclusion is a failure worth repairing: failure, timed_out and
// startup_failure. Cancelled, skipped, neutral, stale and action_required
// checks are not: nothing in the code was found failing, or a person has
// to act first.
func FailingConclusion(conclusion string) bool {
	switch conclusion {
	case "failure", "timed_out", "startup_failure":
		return true
	}
	return false
}

// FailingState reports whether a commit status's state (from a CI system
// that does not use checks) is a failure worth repairing: failure and
// error. Pending and success are not.
func FailingState(state string) bool {
	return state == "failure" || state == "error"
}

// OwnCheck reports whether a check run or suite, made by the app with
// appID and appSlug, is this app's own (selfID, selfSlug): the same app id,
// or the same slug, case ignored. An empty id or slug on our side matches
// nothing. Our own check run is never a repair candidate, and only it
// carries a session behind its buttons: repairing Inspect's verdict would
// be a loop.
func OwnCheck(appID int64, appSlug string, selfID int64, selfSlug string) bool {
	return (selfID != 0 && appID == selfID) ||
		(selfSlug != "" && strings.EqualFold(appSlug, selfSlug))
}
