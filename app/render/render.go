// Package render is every word Inspect says on GitHub: the replies, the
// progress comment, the pull request's body and title, the commit message,
// the check run's titles, summaries and buttons, and the hidden markers
// that let a replayed step find what it posted. Change a reply's wording
// here and nowhere else.
//
// Every function is pure: it takes the facts it needs and returns text. The
// package does no I/O, holds no state and decides nothing but wording; the
// session engine in package app decides what is said and when, and the
// GitHub writer posts it. Text that came from someone else (a request, the
// agent's answer, a check's name, a command's output) is untrusted: it is
// quoted, fenced or kept inside a table cell, never written as live
// Markdown.
package render
