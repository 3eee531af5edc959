package ghconformance

import (
	"errors"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Deviation is a place where what is checked may differ from GitHub's
// description, and why. They are all here, in one list, each with its
// source, so that none is excused silently.
type Deviation struct {
	// Webhook is the x-webhooks name; Fixture the payload file it applies
	// to ("" for every one).
	Webhook, Fixture string
	// Pointer is the JSON pointer of the value the schema refuses.
	Pointer string
	Reason  string
}

// Deviations are the known differences between the payload fixtures
// (testdata/github-webhooks, from octokit/webhooks' examples, recorded
// from github.com in 2018–2019) and the description of 23.0.2, which
// added required fields since. Inspect reads none of these fields.
var Deviations = []Deviation{
	{Webhook: "push", Fixture: "push.payload.json", Pointer: "/repository/has_discussions",
		Reason: "required since 2022; the fixture predates it (octokit/webhooks example)"},
	{Webhook: "pull-request-review-comment-created", Fixture: "pull_request_review_comment.created.json", Pointer: "/pull_request/base/repo/has_discussions",
		Reason: "required since 2022; the fixture predates it (octokit/webhooks example)"},
	{Webhook: "pull-request-review-comment-created", Fixture: "pull_request_review_comment.created.json", Pointer: "/pull_request/head/repo/has_discussions",
		Reason: "required since 2022; the fixture predates it (octokit/webhooks example)"},
	{Webhook: "status", Fixture: "status.payload.json", Pointer: "/commit/commit/verification/verified_at",
		Reason: "required since 2024; the fixture predates it (octokit/webhooks example)"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/app/created_at",
		Reason: `the fixture's App timestamps read "2018-04-25 20:42:10", not RFC 3339 (octokit/webhooks example of 2018)`},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/app/updated_at", Reason: "as created_at"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/check_suite/app/created_at", Reason: "as created_at"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/check_suite/app/updated_at", Reason: "as created_at"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/app/permissions", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/app/events", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/check_suite/app/permissions", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/check_suite/app/events", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/node_id", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/check_run/details_url", Reason: "required later; the fixture predates it"},
	{Webhook: "check-run-rerequested", Fixture: "check_run.rerequested.json", Pointer: "/repository/disabled", Reason: "required later; the fixture predates it"},
	{Webhook: "installation-created", Fixture: "installation.created.json", Pointer: "/installation/created_at",
		Reason: "the fixture's installation timestamps are Unix seconds, the description's RFC 3339 strings (octokit/webhooks example of 2019)"},
	{Webhook: "installation-created", Fixture: "installation.created.json", Pointer: "/installation/updated_at", Reason: "as created_at"},
	{Webhook: "installation-created", Fixture: "installation.created.json", Pointer: "/installation/app_slug", Reason: "required later; the fixture predates it"},
	{Webhook: "installation-repositories-added", Fixture: "installation_repositories.added.json", Pointer: "/installation/created_at",
		Reason: "the fixture's installation timestamps are Unix seconds, the description's RFC 3339 strings (octokit/webhooks example of 2019)"},
	{Webhook: "installation-repositories-added", Fixture: "installation_repositories.added.json", Pointer: "/installation/updated_at", Reason: "as created_at"},
	{Webhook: "installation-repositories-added", Fixture: "installation_repositories.added.json", Pointer: "/installation/app_slug", Reason: "required later; the fixture predates it"},
	// Not a fixture's: GitHub's behaviour. The official check-run
	// conclusions include startup_failure (GitHub's REST docs for check
	// runs and check suites), which the webhook schemas' enums omit; a
	// real delivery may carry it, and handlers treat it as a failure.
	{Webhook: "check-run-completed", Pointer: "/check_run/conclusion",
		Reason: "GitHub sends startup_failure, which x-webhooks' enum omits (docs.github.com check runs: conclusion)"},
	{Webhook: "check-suite-completed", Pointer: "/check_suite/conclusion",
		Reason: "GitHub sends startup_failure, which x-webhooks' enum omits (docs.github.com check suites: conclusion)"},
}

// Problems are the schema errors in err, each as its JSON pointer and
// reason.
func Problems(err error) []Problem {
	var out []Problem
	var walk func(error)
	walk = func(err error) {
		var me openapi3.MultiError
		if errors.As(err, &me) {
			for _, e := range me {
				walk(e)
			}
			return
		}
		var se *openapi3.SchemaError
		if errors.As(err, &se) {
			out = append(out, Problem{Pointer: "/" + strings.Join(se.JSONPointer(), "/"), Reason: se.Reason})
			return
		}
		if err != nil {
			out = append(out, Problem{Reason: err.Error()})
		}
	}
	walk(err)
	return out
}

// Problem is one schema error.
type Problem struct {
	Pointer, Reason string
}

// Excused tells whether a problem with a webhook payload is a listed
// deviation.
func Excused(webhook, fixture string, p Problem) bool {
	for _, d := range Deviations {
		if d.Webhook == webhook && (d.Fixture == "" || d.Fixture == fixture) && d.Pointer == p.Pointer {
			return true
		}
	}
	return false
}
