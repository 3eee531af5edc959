package render

import (
	"fmt"

	"github.com/inspecthq/inspect/session"
)

// Markers are hidden HTML comments in our comments. A replayed step looks
// for its marker before posting, so nothing is posted twice.

// SessionMarker marks a session's progress comment.
func SessionMarker(sessionID string) string { return "<!-- inspect:session=" + sessionID + " -->" }

// FinalMarker marks the one reply of a session that ended without a
// progress comment (a refusal, a config error, giving up).
func FinalMarker(sessionID string) string { return "<!-- inspect:final=" + sessionID + " -->" }

func commentMarker(commentID int64) string {
	return fmt.Sprintf("<!-- inspect:reply-to=%d -->", commentID)
}

// ReplyMarker marks our one reply to a trigger, so a replay finds it.
func ReplyMarker(t session.Trigger) string {
	switch t.Kind {
	case session.KindComment:
		return commentMarker(t.CommentID)
	case session.KindReviewComment:
		return fmt.Sprintf("<!-- inspect:reply-to-review=%d -->", t.CommentID)
	}
	return "<!-- inspect:reply-to-delivery=" + t.DeliveryID + " -->"
}

// CancelDetail is what a cancelled session records; the hidden marker ties
// it to the cancelling comment, so a replayed command can find its work.
func CancelDetail(t session.Trigger) string {
	if t.Kind != session.KindComment {
		return fmt.Sprintf("Cancelled by @%s.<!-- inspect:cancel=%s -->", t.Sender.Login, t.DeliveryID)
	}
	return fmt.Sprintf("Cancelled by @%s.<!-- inspect:cancel=%d -->", t.Sender.Login, t.CommentID)
}
