package render

import (
	"fmt"
	"strings"

	"github.com/inspecthq/inspect/app/store"
)

// The replies to `status`, `cancel` and `retry`.

// StatusRow is one session in a status listing, with its supervisor's
// latest progress report while it runs (fixed phrases and names, cleaned on
// arrival), so a long run shows where it is.
type StatusRow struct {
	Session  store.Session
	Progress string
}

// NoSessionsReply answers `status` on a thread with no sessions.
func NoSessionsReply(commandWord string) string {
	return fmt.Sprintf("No Inspect sessions on this thread yet. Start one with `%s <instructions>`.", commandWord)
}

// StatusListing answers `status`: the thread's sessions, newest first.
func StatusListing(rows []StatusRow) string {
	var b strings.Builder
	b.WriteString("**Inspect sessions on this thread** (newest first)\n\n| Session | Requested by | Status | Started |\n|---|---|---|---|\n")
	for _, r := range rows {
		sess := r.Session
		// Logins without "@": anyone may ask for status, and it must not
		// become a way to make the bot ping people.
		status := StatusWord(sess)
		if r.Progress != "" {
			status += ": " + untrustedSpan(r.Progress)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", sess.ID, sess.RequesterLogin, cell(status), sess.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return b.String()
}

// NothingToCancelReply answers `cancel` when no session is active.
func NothingToCancelReply() string {
	return "Nothing to cancel: no Inspect session is active on this thread."
}

// CancelledReply answers `cancel` (or the Cancel button): the sessions it
// stopped, as sender asked.
func CancelledReply(sessionIDs []string, sender string) string {
	return fmt.Sprintf("Cancelled %s, as @%s asked.", codeList(sessionIDs), sender)
}

// UnlabelCancelledReply says which sessions stopped because sender took
// their label off.
func UnlabelCancelledReply(sessionIDs []string, sender, label string) string {
	return fmt.Sprintf("Cancelled %s: @%s removed the %s label.", codeList(sessionIDs), sender, pathSpan(label))
}

// StillActiveReply answers `retry` while a session on the thread is active.
func StillActiveReply(sess store.Session, commandWord string) string {
	return fmt.Sprintf("Session `%s` is still %s. Use `%s cancel` first if you want to start over.", sess.ID, sess.State(), commandWord)
}

// NothingToRetryReply answers `retry` on a thread with no request to retry.
func NothingToRetryReply(commandWord string) string {
	return fmt.Sprintf("Nothing to retry on this thread. Start a session with `%s <instructions>`.", commandWord)
}

// codeList is session ids as code spans, comma-separated.
func codeList(ids []string) string {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = "`" + id + "`"
	}
	return strings.Join(quoted, ", ")
}
