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

// CheckSource is which of GitHub's three failure signals a check is.
type CheckSource string

const (
	SourceCheckRun     CheckSource = "check_run"
	SourceCheckSuite   CheckSource = "check_suite"
	SourceCommitStatus CheckSource = "status"
)

// CheckFacts is what CountsAsFailure reads of one check run, check suite
// or commit status, whether from a webhook or from a listing.
type CheckFacts struct {
	Source CheckSource
	// Result is a run's or suite's conclusion, or a status's state.
	Result string
	// AppID and AppSlug name the app that made a run or suite; a status
	// has none.
	AppID   int64
	AppSlug string
	// CreatorLogin and CreatorType name who posted a status: a status
	// webhook's sender, a listed status's creator ("" where the listing
	// names none, as the combined status does).
	CreatorLogin, CreatorType string
}

// AppIdentity is this app: its id and slug (its bot user is
// "<slug>[bot]").
type AppIdentity struct {
	ID   int64
	Slug string
}

// CheckReason says why a check does not count as a failure to repair.
type CheckReason string

const (
	// CheckOurs: Inspect's own check run or suite, or a status its bot
	// posted. Repairing Inspect's own verdict would be a loop.
	CheckOurs CheckReason = "own_check"
	// CheckNotFailing: a conclusion or state that is not a failure
	// (FailingConclusion, FailingState).
	CheckNotFailing CheckReason = "not_failing"
	// CheckUnknownSource: none of the three signals.
	CheckUnknownSource CheckReason = "unknown_source"
)

// CountsAsFailure is the one answer to "which failing check counts": a
// check run or suite another app made whose conclusion is a failure
// (FailingConclusion), or a commit status not posted by our bot whose
// state is a failure (FailingState). A run or suite is ours by app id or
// slug (OwnCheck); a status carries no app, so it is ours when its
// creator is our bot user (IsOwnApp), the same test a sender gets
// (decision 0047). Whether the repository repairs a check of that name is
// its config's question (config.Repo.RepairsCheck), asked after this one.
// When it does not count, the reason says why.
func CountsAsFailure(c CheckFacts, self AppIdentity) (bool, CheckReason) {
	switch c.Source {
	case SourceCheckRun, SourceCheckSuite:
		if OwnCheck(c.AppID, c.AppSlug, self.ID, self.Slug) {
			return false, CheckOurs
		}
		if !FailingConclusion(c.Result) {
			return false, CheckNotFailing
		}
	case SourceCommitStatus:
		if IsOwnApp(c.CreatorLogin, c.CreatorType, self.Slug) {
			return false, CheckOurs
		}
		if !FailingState(c.Result) {
			return false, CheckNotFailing
		}
	default:
		return false, CheckUnknownSource
	}
	return true, ""
}
