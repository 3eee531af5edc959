package session

// TriggerKind says which way a request, and the session it starts, came
// in. One set serves both places it is stored, under two spellings of the
// comment (the one difference):
//
//	kind               Trigger.Kind (work payload)   sessions.trigger_kind
//	KindComment        "" (omitted)                  "comment"
//	KindReviewComment  "review_comment"              "review_comment"
//	KindLabel          "label"                       "label"
//	KindUnlabel        "unlabel"                     (starts no session)
//	KindCheckAction    "check_action"                (starts no session)
//	KindDashboard      "dashboard"                   "dashboard"
//	KindRepair         (no Trigger: a CheckFailure)  "repair"
//	KindRetry          (a command, not a way in)     "retry"
//
// The zero value is a comment, so triggers stored before kinds existed
// decode as what they were; StoredName and KindFromStoredName are the
// column's spelling.
type TriggerKind string

// The ways in.
const (
	// KindComment is a command in an issue or pull-request comment
	// (`issue_comment.created`).
	KindComment TriggerKind = ""
	// KindReviewComment is a command in a review comment on a pull
	// request's diff (`pull_request_review_comment.created`).
	KindReviewComment TriggerKind = "review_comment"
	// KindLabel is a label added to an issue (`issues.labeled`); Label
	// names it and Command is a run with the title.
	KindLabel TriggerKind = "label"
	// KindUnlabel is a label removed from an issue (`issues.unlabeled`);
	// Command is a cancel of the sessions that label started.
	KindUnlabel TriggerKind = "unlabel"
	// KindCheckAction is a button on Inspect's own check run, or on the
	// session's dashboard page
	// (`check_run.requested_action`, `check_run.rerequested`); SessionID
	// is the check run's session and Command a retry or a cancel.
	KindCheckAction TriggerKind = "check_action"
	// KindDashboard is a run started from the dashboard's form (app/web):
	// the signed-in user's request on an issue or pull request, or on a
	// branch (Branch set, Number 0), with no comment behind it. DeliveryID
	// is the form post's own.
	KindDashboard TriggerKind = "dashboard"
	// KindRepair is a session started by failing checks (a CheckFailure
	// the repo's config asks to repair), never by a Trigger.
	KindRepair TriggerKind = "repair"
	// KindRetry is a session a retry command started, linked to the
	// session it retries.
	KindRetry TriggerKind = "retry"
)

// storedComment is KindComment as sessions.trigger_kind spells it.
const storedComment = "comment"

// StoredName is k as sessions.trigger_kind stores it, and as the metrics'
// and the dashboard's trigger filter name it: KindComment is "comment",
// every other kind its own value.
func (k TriggerKind) StoredName() string {
	if k == KindComment {
		return storedComment
	}
	return string(k)
}

// String is the kind's name as people see it (the dashboard's pages, the
// logs): its StoredName.
func (k TriggerKind) String() string { return k.StoredName() }

// KindFromStoredName reads sessions.trigger_kind. A name this version does
// not know (written by a newer replica) is kept as it is, so writing the
// row back does not change it. The empty name, which no row holds (the
// column is NOT NULL and always written), reads as the zero kind, a
// comment.
func KindFromStoredName(name string) TriggerKind {
	if name == storedComment {
		return KindComment
	}
	return TriggerKind(name)
}
