package policy

// CleanText removes the hidden characters Parse removes from instructions
// (zero-width and bidi controls, and the like) from other untrusted text
// that reaches an agent or a commit message: an issue's title, comments,
// check output.
func CleanText(s string) string { return cleanText(s) }

// CanWrite reports whether a role may start sessions: the built-in write,
// maintain and admin roles. The app uses it to keep only writers' comments
// in a session's context.
func CanWrite(r Role) bool { return canWrite(r) }
