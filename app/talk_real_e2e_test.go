package app_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakemodel"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

var realCodex = realAgent{preset: "codex",
	kind: "openai", base: func(m *fakemodel.Server) string { return m.URL() + "/v1" }}

// The texts of the conversation: distinct words a model request's body
// can be searched for.
const (
	talkTask     = "TALK-TASK make TestAdd pass"
	talkSteer    = "TALK-STEER and keep the fix to one line"
	talkHeld     = "TALK-HELD never sent: the steer stops the run first"
	talkDone     = "TALK-DONE fixed Add"
	talkContinue = "TALK-CONTINUE now write the notes"
	talkNotes    = "TALK-NOTES Add adds two numbers"
	// talkFound is what the continuation's agent prints when its
	// workspace holds the first attempt's fix.
	talkFound = "TALK-FIRST-CHANGE-FOUND"
)

// Issue 36's acceptance, through the app, with each real CLI (Codex CLI,
// Claude Code, OpenCode, from the agents' tools image) against the
// scripted model: alice's /inspect on the issue starts a session; mara's
// /inspect on the thread steers it while the model holds its first answer
// (steer "interrupt"): the run is stopped and the CLI's own conversation
// resumed, and the model's next request holds alice's task and mara's
// message. It ends in a pull request. Then ada's /inspect on that pull
// request continues the conversation (decision 0072): a new session whose
// agent resumes the CLI's kept state (decision 0073; the evidence names
// the attempt it restored), whose first model request holds both earlier
// turns and ada's, and whose workspace holds the first attempt's fix. Its
// commit lands on the same pull request, the only one; each commit
// credits alice and mara, the continuation's ada too, and the PR body's
// turns list is the whole conversation's.
func TestRealCLIsAreSteeredAndContinuedThroughTheApp(t *testing.T) {
	for _, a := range []realAgent{realCodex, realClaudeCode, realOpenCode} {
		t.Run(a.preset, func(t *testing.T) {
			// Side by side: each has its own harness, executor and model,
			// and most of each is waiting on its CLI.
			t.Parallel()
			steerAndContinueThroughTheApp(t, a)
		})
	}
}

func steerAndContinueThroughTheApp(t *testing.T, a realAgent) {
	h, lx, model := newTalkHarness(t, a, sandboxtest.ToolsLayerCache(t, ".."))

	// The model holds its first answer until the test ends: mara's
	// message, not a timer, is what moves the session on.
	hold, holding := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(hold) })
	model.Script(
		fakemodel.Turn{Hold: hold, Holding: holding, Message: talkHeld},
		fakemodel.Turn{Exec: []string{"sed -i 's/return a + b + 1/return a + b/' calc.go && echo fixed"}},
		fakemodel.Turn{Message: talkDone},
	)
	ctx := context.Background()
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkTask})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	first := h.onlySession()
	select {
	case <-holding:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the CLI never asked the model; requests %d\n%s", len(model.Requests()), h.logs)
	}
	firstRun := len(model.Requests()) // the held request is the first run's last
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkSteer, sender: "mara"})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	if n := len(h.sessions()); n != 1 {
		t.Fatalf("%d sessions: mara's message started one of its own\n%s", n, h.logs)
	}
	h.waitForSessionAttempt(lx, first.ID)
	h.runWorkers()
	first, err := h.st.GetSession(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if first.Outcome != session.Changed || first.PRNumber == 0 {
		t.Fatalf("the first session: %s/%s, PR %d: %s\nmodel requests %d, left %d\n%s", first.State(), first.Outcome, first.PRNumber, first.Detail, len(model.Requests()), model.Remaining(), h.logs)
	}
	reqs := model.Requests()
	if len(reqs) <= firstRun {
		t.Fatalf("no model request after the held one (%d)", len(reqs))
	}
	for i, r := range reqs[:firstRun] {
		if bytes.Contains(r.Input, []byte(talkSteer)) {
			t.Errorf("request %d, before mara's message, holds it", i)
		}
	}
	holdsAll(t, "the model's request after the steer", reqs[firstRun], talkTask, talkSteer, "@mara says:")
	if turns, err := h.st.SessionTurns(ctx, first.ID); err != nil || len(turns) != 1 || turns[0].State != session.TurnDone || turns[0].Outcome != string(session.Changed) {
		t.Errorf("mara's turn after the end: %+v (%v)", turns, err)
	}
	if kept := attemptResult(t, h, first.AttemptID).Evidence.AgentState; kept == nil || kept.KeptBytes == 0 {
		t.Fatalf("the first attempt kept no agent state: %+v", kept)
	}

	// ada continues it on the pull request it opened.
	model.Script(
		// sed, not grep: Claude Code's shell runs grep as its own
		// bundled search, which this root cannot load.
		fakemodel.Turn{Exec: []string{"sed -n '/return a + b }/s/.*/" + talkFound + "/p' calc.go; printf '%s\\n' '" + talkNotes + "' > NOTES.md"}},
		fakemodel.Turn{Message: "Wrote the notes."},
	)
	before := len(model.Requests())
	h.clock.Advance(time.Minute)
	if code, _ := h.deliver("issue_comment", h.event(commentOpts{body: "/inspect " + talkContinue, sender: "ada", onPR: true, number: first.PRNumber})); code != 200 {
		t.Fatal(code)
	}
	h.runWorkers()
	onPR, err := h.st.SessionsForTarget(ctx, repoID, first.PRNumber, 10)
	if err != nil || len(onPR) != 1 {
		t.Fatalf("sessions on the PR: %+v (%v)\n%s", onPR, err, h.logs)
	}
	next := onPR[0]
	if next.Info().Continues != first.ID {
		t.Fatalf("ada's session continues %q, not %s", next.Info().Continues, first.ID)
	}
	h.waitForSessionAttempt(lx, next.ID)
	h.runWorkers()
	if next, err = h.st.GetSession(ctx, next.ID); err != nil {
		t.Fatal(err)
	}
	if next.Outcome != session.Changed {
		t.Fatalf("the continuation: %s/%s: %s\nmodel requests %d, left %d\n%s", next.State(), next.Outcome, next.Detail, len(model.Requests()), model.Remaining(), h.logs)
	}
	reqs = model.Requests()
	if len(reqs) <= before {
		t.Fatalf("the continuation asked the model nothing")
	}
	holdsAll(t, "the continuation's first model request", reqs[before], talkTask, talkSteer, talkContinue)
	if ev := attemptResult(t, h, next.AttemptID).Evidence; ev.AgentState == nil || ev.AgentState.Restored != first.AttemptID {
		t.Errorf("the continuation did not resume the first attempt's conversation: %+v", ev.AgentState)
	}
	if outs := strings.Join(model.FunctionOutputs(), "\n"); !strings.Contains(outs, talkFound) {
		t.Errorf("the continuation's workspace lacks the first attempt's fix:\n%s", outs)
	}

	// One pull request, with both commits, each crediting everyone who
	// spoke so far.
	if next.PRNumber != first.PRNumber {
		t.Errorf("the continuation's PR #%d, not #%d", next.PRNumber, first.PRNumber)
	}
	all, _, err := h.client(t).PullRequests.List(ctx, owner, repoName, &github.PullRequestListOptions{State: "all"})
	if err != nil {
		t.Fatal(err)
	}
	var prs []*github.PullRequest // Inspect's: the harness's own #2 is a person's
	for _, p := range all {
		if strings.HasPrefix(p.GetHead().GetRef(), "inspect/") {
			prs = append(prs, p)
		}
	}
	if len(prs) != 1 || prs[0].GetNumber() != first.PRNumber {
		t.Fatalf("Inspect's pull requests %d, want one, #%d", len(prs), first.PRNumber)
	}
	pr := prs[0]
	if pr.GetHead().GetSHA() != next.CommitSHA {
		t.Errorf("the PR's head %s is not the continuation's commit %s", pr.GetHead().GetSHA(), next.CommitSHA)
	}
	git := h.gh.GitDir(owner, repoName)
	for _, c := range []struct {
		sha string
		who []string
	}{{first.CommitSHA, []string{"alice", "mara"}}, {next.CommitSHA, []string{"alice", "mara", "ada"}}} {
		show := gitShow(t, git, c.sha)
		for _, who := range c.who {
			if !strings.Contains(show, "Co-authored-by: "+who+" <") {
				t.Errorf("commit %s does not credit %s:\n%s", c.sha, who, show)
			}
		}
	}
	if parent, err := exec.Command("git", "--git-dir", git, "rev-parse", next.CommitSHA+"^").Output(); err != nil || strings.TrimSpace(string(parent)) != first.CommitSHA {
		t.Errorf("the continuation's commit's parent is %s (%v), not the first's %s", parent, err, first.CommitSHA)
	}
	for _, want := range []string{"### Turns", "`" + talkSteer + "`", "`" + talkContinue + "`"} {
		if !strings.Contains(pr.GetBody(), want) {
			t.Errorf("the PR body lacks %q:\n%s", want, pr.GetBody())
		}
	}
}

// newTalkHarness is a sandbox harness whose sessions run the real CLI of
// a from the agents' tools image (decision 0069), flattened into
// layerCache, against a scripted model that takes only the server's key;
// the repository is the sample with a verify command that checks the fix.
func newTalkHarness(tb testing.TB, a realAgent, layerCache string) (*harness, *local.Executor, *fakemodel.Server) {
	tb.Helper()
	model := fakemodel.New()
	tb.Cleanup(model.Close)
	model.RequireKey(modelKey)
	_, tools := sandboxtest.ToolsImage(tb, "..")
	h, lx := newSandboxHarnessRunning(tb, []string{"--layer-cache", layerCache}, func(c *configServer) {
		c.Agents.Providers = map[string]config.Provider{"scripted": {Kind: a.kind, BaseURL: a.base(model), Key: modelKey}}
		c.Agents.Models = []config.Model{{Name: "scripted-1", Provider: "scripted", Presets: []string{a.preset}}}
		c.Agents.ToolsImage = tools
	})
	h.gh.CommitFiles(owner, repoName, "main", map[string]string{
		".github/inspect.yml": "agent:\n  preset: " + a.preset + "\n  model: scripted-1\n" +
			"verify:\n  - name: the fix\n    run: [grep, -q, \"return a + b }\", calc.go]\n",
	}, a.preset+" as the agent")
	return h, lx, model
}

// waitForSessionAttempt waits for the local executor's run of the
// session's current attempt to end, and fails unless it exited 0.
func (h *harness) waitForSessionAttempt(lx *local.Executor, id string) {
	h.t.Helper()
	sess, err := h.st.GetSession(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	a, err := h.st.GetAttempt(context.Background(), sess.AttemptID)
	if err != nil {
		h.t.Fatalf("no attempt: %v (%s)\n%s", err, sess.State(), h.logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := lx.Wait(ctx, a.ExternalID)
	if err != nil || st.ExitCode != 0 {
		h.t.Fatalf("inspect runner: %+v %v\n%s", st, err, h.logs)
	}
}

// holdsAll fails unless the model request's input holds every text.
func holdsAll(t *testing.T, what string, r fakemodel.Request, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if !bytes.Contains(r.Input, []byte(s)) {
			t.Errorf("%s lacks %q:\n%s", what, s, r.Input)
		}
	}
}
