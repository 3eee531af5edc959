package app_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/session"
)

// hostileAnswer is the answer of issue 18's review: as Markdown it closes
// #3, mentions @octocat, loads a remote image and injects HTML.
const hostileAnswer = "Fixes #3 @octocat ![x](https://example.com/x.png) <img src=x>"

// The agent's answer reaches the PR body (a change), and the progress
// comment and the check run (no change). Judged by GitHub's rules, as the
// stand-in models them, across every version of every body Inspect wrote:
// the only issue closed is the session's own, the only ones referenced
// that issue and Inspect's pull request, the only person mentioned the
// requester, nothing loads and the only HTML is Inspect's markers; the
// answer is still there to read.
func TestAgentAnswerCannotActOnGitHub(t *testing.T) {
	h, ex := newSessionHarness(t)
	withRealPR(t, h)
	// The issue the answer means to close exists; Inspect's pull request
	// is then #4.
	h.gh.AddIssue(owner, repoName, fakegithub.Issue{Number: 3, Title: "Keep this open", User: "mara", State: "open"})
	// An issue session with a change: the answer goes into the PR body.
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect fix the failing test"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv := h.claim(ex.last(t))
	spec := sv.spec()
	h.runWorkers()
	sv.uploadAnswer(spec, 0, hostileAnswer, fixedCalc)
	h.runWorkers()
	issueSess := h.onlySession()
	if issueSess.Outcome != session.Changed || issueSess.PRNumber == 0 {
		t.Fatalf("issue session = %s/%s (%s)\n%s", issueSess.State(), issueSess.Outcome, issueSess.Detail, h.logs)
	}
	// A PR session without a change: the answer goes into the progress
	// comment and the check run.
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect why does it fail?", onPR: true})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	sv = h.claim(ex.last(t))
	spec = sv.spec()
	h.runWorkers()
	sv.uploadAnswer(spec, 0, hostileAnswer)
	h.runWorkers()
	for _, s := range h.sessions() {
		if s.Number == prNumber && s.Outcome != session.NoChange {
			t.Fatalf("PR session = %s/%s (%s)\n%s", s.State(), s.Outcome, s.Detail, h.logs)
		}
	}

	ours := "#" + strconv.Itoa(issueSess.PRNumber) // Inspect names its pull request
	if ours == "#3" {
		t.Fatal("Inspect's pull request is #3, the issue the answer names")
	}
	rendered := h.gh.RenderedBodies(owner, repoName)
	kinds := map[string]bool{}
	for _, r := range rendered {
		kinds[r.Kind] = true
		where := r.Kind + " " + strings.SplitN(r.Body, "\n", 2)[0]
		for _, c := range r.Closes {
			if r.Kind != fakegithub.RenderedPull || r.Number != issueSess.PRNumber || c != "#1" {
				t.Errorf("%s closes %s:\n%s", where, c, r.Body)
			}
		}
		for _, ref := range r.References {
			if ref != "#1" && ref != ours {
				t.Errorf("%s references %s:\n%s", where, ref, r.Body)
			}
		}
		for _, m := range r.Mentions {
			if m != "@alice" {
				t.Errorf("%s mentions %s:\n%s", where, m, r.Body)
			}
		}
		if len(r.Images) > 0 {
			t.Errorf("%s loads %q:\n%s", where, r.Images, r.Body)
		}
		for _, tag := range r.HTML {
			if tag != "!--" || !strings.Contains(r.Body, "<!-- inspect:") {
				t.Errorf("%s renders HTML %q:\n%s", where, tag, r.Body)
			}
		}
	}
	for _, k := range []string{fakegithub.RenderedPull, fakegithub.RenderedComment, fakegithub.RenderedCheckRun} {
		if !kinds[k] {
			t.Errorf("no %s was written; rendered: %+v", k, rendered)
		}
	}
	var answered []string
	for _, r := range rendered {
		if strings.Contains(r.Body, "octocat") && strings.Contains(r.Body, "https://example.com/x.png") && strings.Contains(r.Body, "src=x") {
			answered = append(answered, r.Kind)
		}
	}
	for _, k := range []string{fakegithub.RenderedPull, fakegithub.RenderedComment, fakegithub.RenderedCheckRun} {
		if !slices.Contains(answered, k) {
			t.Errorf("the answer is not shown in a %s (shown in %q)", k, answered)
		}
	}
	var pr fakegithub.Rendered
	for _, r := range rendered {
		if r.Kind == fakegithub.RenderedPull && r.Number == issueSess.PRNumber {
			pr = r
		}
	}
	if !slices.Equal(pr.Closes, []string{"#1"}) {
		t.Errorf("the PR closes %q, want its issue #1 only", pr.Closes)
	}
}
