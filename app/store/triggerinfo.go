package store

import (
	"encoding/json"
	"errors"

	"github.com/inspecthq/inspect/session"
)

// TriggerInfo is what a session's way in adds (sessions.trigger_info).
type TriggerInfo struct {
	// Label is the label that started a label session.
	Label string `json:"label,omitempty"`
	// Review is the review comment a review-comment session answers.
	Review *ReviewInfo `json:"review,omitempty"`
	// Checks are the failing checks a repair session repairs.
	Checks []string `json:"checks,omitempty"`
	// Repair is this repair's number and the budget it counts against.
	RepairNumber int  `json:"repair_number,omitempty"`
	RepairBudget int  `json:"repair_budget,omitempty"`
	RepairLast   bool `json:"repair_last,omitempty"`
	// Queue is the progress comment's line while the session waited for
	// capacity, and QueuedFor its scope, so it can say so when it starts.
	QueuedFor string `json:"queued_for,omitempty"`
	// Branch is the branch a dashboard run was started on, with no issue
	// or pull request behind it (Number is 0). Untrusted text, checked by
	// policy.CheckBranchName when it was given.
	Branch string `json:"branch,omitempty"`
	// Continues is the session whose conversation this one continues: a
	// request on its thread or pull request after it ended (decision
	// 0072). Its turns, and those it continued, are this one's history.
	Continues string `json:"continues,omitempty"`
}

// Target is what the session works on: its issue or pull request, or the
// branch a dashboard run named (TriggerInfo.Branch; Number is then 0).
func (s Session) Target() session.Target { return session.TargetOf(s.Number, s.IsPR, s.Info().Branch) }

// ReviewInfo is the review comment a review-comment session answers: the
// comment, and where it sits and whose thread it is (the one
// session.ReviewComment a Trigger carries too). It is stored in
// sessions.trigger_info under its own names (reviewInfoJSON), with the
// thread's first comment written out as thread_id.
type ReviewInfo struct {
	CommentID int64
	session.ReviewComment
}

// ThreadID is the thread's first comment, which replies attach to.
func (r ReviewInfo) ThreadID() int64 { return r.ThreadRoot(r.CommentID) }

// reviewInfoJSON is ReviewInfo as sessions.trigger_info stores it.
type reviewInfoJSON struct {
	CommentID int64  `json:"comment_id"`
	ThreadID  int64  `json:"thread_id"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"`
	DiffHunk  string `json:"diff_hunk,omitempty"`
	CommitID  string `json:"commit_id,omitempty"`
}

// MarshalJSON writes r as sessions.trigger_info stores it.
func (r ReviewInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(reviewInfoJSON{CommentID: r.CommentID, ThreadID: r.ThreadID(), Path: r.Path, Line: r.Line,
		StartLine: r.StartLine, Side: r.Side, DiffHunk: r.DiffHunk, CommitID: r.CommitID})
}

// UnmarshalJSON reads r as sessions.trigger_info stores it: a thread other
// than the comment's own is the one it replies in. A field of the wrong
// type (a newer replica's) is left zero and the rest is read, as
// encoding/json does for a plain struct, so the TriggerInfo around it
// keeps its other fields.
func (r *ReviewInfo) UnmarshalJSON(b []byte) error {
	var w reviewInfoJSON
	if err := json.Unmarshal(b, &w); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return err
		}
	}
	*r = ReviewInfo{CommentID: w.CommentID, ReviewComment: session.ReviewComment{Path: w.Path, Line: w.Line,
		StartLine: w.StartLine, Side: w.Side, DiffHunk: w.DiffHunk, CommitID: w.CommitID}}
	if w.ThreadID != w.CommentID {
		r.InReplyTo = w.ThreadID
	}
	return nil
}

// Info decodes what the session's way in added (sessions.trigger_info).
func (s Session) Info() TriggerInfo {
	var ti TriggerInfo
	if s.TriggerInfo != "" {
		// Only our own JSON is stored here; a row that does not decode
		// (written by a newer replica) reads as no extra information.
		_ = json.Unmarshal([]byte(s.TriggerInfo), &ti)
	}
	return ti
}

// Encode is ti as sessions.trigger_info stores it: "" when it adds nothing.
func (ti TriggerInfo) Encode() string {
	if ti.Label == "" && ti.Review == nil && len(ti.Checks) == 0 && ti.RepairNumber == 0 && ti.QueuedFor == "" && ti.Branch == "" && ti.Continues == "" {
		return ""
	}
	b, err := json.Marshal(ti)
	if err != nil {
		// A plain struct of strings and numbers always marshals.
		panic("marshalling a TriggerInfo: " + err.Error())
	}
	return string(b)
}
