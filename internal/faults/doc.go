// Package faults holds Inspect's fault tests: real `inspect serve`
// processes (internal/servetest) sharing one PostgreSQL database, behind
// the GitHub stand-in (internal/fakegithub), which also plays GitHub's
// webhook sender and its delivery log. A test picks the moment of a crash
// by having the stand-in hold a chosen request open, then SIGKILLs the
// replica making it; there are no failpoints in production code. Each test
// checks the invariants afterwards: every session ends, nothing is done
// twice.
//
// Rates, windows, leases and timeouts are configured down so that the
// suite runs in minutes: `make test` runs it with everything else, and
// `make bench-faults` runs it (and the intake benchmark) on its own.
package faults
