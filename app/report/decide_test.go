package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/app/verdict"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

// fakeReport is steps as a plain struct, in the manner of
// policy-bot's pulltest: it answers from its fields and records each call,
// so decide's decisions are tested without GitHub or its stand-in.
type fakeReport struct {
	cfg    config.Repo
	cfgErr error
	// doneAfter, when set, is the call after whose Record the session is
	// found done (ended meanwhile by a cancel).
	doneAfter string
	calls     []string
	ended     *endCall
	sess      store.Session
	// attestErr is what Attest returns.
	attestErr error
}

type endCall struct {
	outcome session.Outcome
	reason  string
	reply   string
}

func (f *fakeReport) RepoConfig(context.Context, store.Session) (config.Repo, error) {
	f.calls = append(f.calls, "config")
	return f.cfg, f.cfgErr
}

func (f *fakeReport) Commit(_ context.Context, _ store.Session, spec contract.Spec, m *contract.Manifest) (string, error) {
	f.calls = append(f.calls, fmt.Sprintf("commit %d files on %s", len(m.Files), spec.PinnedSHA))
	return "c0ffee", nil
}

func (f *fakeReport) Push(_ context.Context, sess store.Session, _ contract.Spec, verified bool, _ policy.ChangeSummary, _ contract.Evidence) (string, int, error) {
	f.calls = append(f.calls, fmt.Sprintf("push %s verified=%t", sess.CommitSHA, verified))
	return "inspect/7-abcdefgh", 8, nil
}

func (f *fakeReport) Attest(_ context.Context, sess store.Session, _ contract.Spec, _ contract.Evidence) error {
	f.calls = append(f.calls, "attest "+sess.CommitSHA)
	return f.attestErr
}

func (f *fakeReport) CheckRun(_ context.Context, sess store.Session) (int64, error) {
	f.calls = append(f.calls, "check run on "+sess.HeadSHA)
	return 99, nil
}

func (f *fakeReport) AnnotateFailures(_ context.Context, sess store.Session, _ contract.Spec, _ contract.Evidence) {
	f.calls = append(f.calls, fmt.Sprintf("annotate %d", sess.CheckRunID))
}

func (f *fakeReport) Record(_ context.Context, _ string, fn func(*store.Session)) (store.Session, error) {
	fn(&f.sess)
	last := f.calls[len(f.calls)-1]
	if f.doneAfter != "" && strings.HasPrefix(last, f.doneAfter) {
		f.sess = store.Fixture(session.Done, f.sess)
	}
	return f.sess, nil
}

func (f *fakeReport) End(_ context.Context, _ string, outcome session.Outcome, reason, reply string) error {
	f.calls = append(f.calls, "end "+string(outcome))
	f.ended = &endCall{outcome: outcome, reason: reason, reply: reply}
	return nil
}

func TestReportResultDecides(t *testing.T) {
	prSession := store.Fixture(session.Reporting, store.Session{ID: "s-0123456789", RepoOwner: "acme", RepoName: "widgets", Number: 7, IsPR: true, RequesterLogin: "alice", HeadSHA: "head0", CheckRunID: 5})
	issueSession := prSession
	issueSession.IsPR, issueSession.CheckRunID, issueSession.HeadSHA = false, 0, ""
	passed := []contract.CommandResult{{Name: "test", Phase: contract.PhaseVerify, ExitCode: 0}}
	failed := []contract.CommandResult{{Name: "test", Phase: contract.PhaseVerify, ExitCode: 1}}
	change := &contract.Manifest{Files: []contract.FileChange{{Path: "calc.go", Mode: "100644", Content: []byte("package calc\n")}}}
	workflow := &contract.Manifest{Files: []contract.FileChange{{Path: ".github/workflows/ci.yml", Mode: "100644", Content: []byte("on: push\n")}}}
	orgConfig := &contract.Manifest{Files: []contract.FileChange{{Path: "inspect.yml", Mode: "100644", Content: []byte("enabled: true\n")}}}
	spec := contract.Spec{PinnedSHA: "pin0", Limits: contract.Limits{MaxChangedFiles: 10, MaxChangeBytes: 1 << 20}}
	// Evidence compared with the base (decision 0081): verify's commands,
	// and the comparison's counts and listed tests.
	againstBase := func(cmds []contract.CommandResult, counts contract.BaselineCounts, tests ...contract.TestComparison) contract.Evidence {
		failures := counts.NewlyFailing + counts.StillFailing
		return contract.Evidence{Outcome: contract.OutcomeOK, Commands: cmds, Tests: &contract.TestSummary{Passed: counts.Passing + counts.Fixed, Failed: failures},
			Baseline: &contract.BaselineComparison{Status: contract.BaselineCompared, AttemptID: "a-base", Verify: failed, Counts: counts, Tests: tests}}
	}
	fixedA := contract.TestComparison{Name: "TestA", Base: contract.TestFailed, Change: contract.TestPassed, Fared: contract.TestFixed}
	brokeC := contract.TestComparison{Name: "TestC", Base: contract.TestPassed, Change: contract.TestFailed, Fared: contract.TestNewlyFailing}
	oldFailure := contract.TestComparison{Name: "TestOld", Base: contract.TestFailed, Change: contract.TestFailed, Fared: contract.TestStillFailing}
	deletedA := contract.TestComparison{Name: "TestA", Base: contract.TestFailed, Fared: contract.TestRemoved}
	skippedA := contract.TestComparison{Name: "TestA", Base: contract.TestFailed, Change: contract.TestSkipped, Fared: contract.TestSkippedByChange}
	reproduce := func(r contract.Reproduction) contract.Evidence {
		ev := againstBase(passed, contract.BaselineCounts{Fixed: 1, Passing: 3}, fixedA)
		ev.Baseline.Reproduction = &r
		return ev
	}

	cases := map[string]struct {
		sess      store.Session
		up        contract.ResultUpload
		cfgErr    error
		doneAfter string
		calls     []string
		outcome   session.Outcome
		reason    string
		reply     string // a part of the reply
		// conclusion, when set, is the check run's, as the sync draws it
		// from the stored outcome and reason.
		conclusion string
	}{
		"timed out: ends, writes nothing": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeTimedOut}, Manifest: change},
			calls: []string{"end timed_out"}, outcome: session.TimedOut, reason: "timed_out",
		},
		"cancelled: ends, writes nothing": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeCancelled}, Manifest: change},
			calls: []string{"end cancelled"}, outcome: session.Cancelled, reason: "cancelled",
		},
		"agent failed: error with its reason": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeAgentFailed}, Manifest: change},
			calls: []string{"end error"}, outcome: session.Errored, reason: "agent_failed",
		},
		"a service failed: error naming it": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeError,
				Services: []contract.ServiceResult{{Name: "redis", Ready: true}, {Name: "postgres", Failure: "was not ready within 5s", OutputTail: "FATAL: no\n"}}}},
			calls: []string{"end error"}, outcome: session.Errored, reason: "error", reply: "the service `postgres` `was not ready within 5s`",
		},
		"no files: no change": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}},
			calls: []string{"end no_change"}, outcome: session.NoChange, reason: "no_change",
		},
		"unreadable repo config: refused, fail closed": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			cfgErr: &config.RepoConfigError{Path: ".github/inspect.yml", Err: errors.New("bad yaml")},
			calls:  []string{"config", "end change_refused"}, outcome: session.ChangeRefused, reason: "config_invalid",
		},
		"protected path: refused, nothing committed": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: workflow},
			calls: []string{"config", "end change_refused"}, outcome: session.ChangeRefused, reason: string(policy.ReasonProtectedPath), reply: ".github/workflows/ci.yml",
		},
		"the org-wide config in the owner's .github repo: refused": {
			sess:  func() store.Session { s := prSession; s.RepoName = ".github"; return s }(),
			up:    contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: orgConfig},
			calls: []string{"config", "end change_refused"}, outcome: session.ChangeRefused, reason: string(policy.ReasonProtectedPath), reply: "`inspect.yml`",
		},
		"inspect.yml at another repo's root is an ordinary file": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: orgConfig},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true", "end changed"},
			outcome: session.Changed, reason: "changed",
		},
		"verified PR change: commit, push, changed": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true", "end changed"},
			outcome: session.Changed, reason: "changed",
		},
		"failed verification on a PR: pushed unverified, annotated": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeVerifyFailed, Commands: failed}, Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "verification_failed",
		},
		"against the base: the target fixed": {
			sess: prSession, up: contract.ResultUpload{Evidence: againstBase(passed, contract.BaselineCounts{Fixed: 1, Passing: 3}, fixedA), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true", "end changed"},
			outcome: session.Changed, reason: "changed", conclusion: "success",
		},
		"against the base: the target fixed and another broken": {
			sess: prSession, up: contract.ResultUpload{Evidence: againstBase(failed, contract.BaselineCounts{Fixed: 1, NewlyFailing: 1, Passing: 3}, brokeC, fixedA), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "verification_failed", conclusion: "failure", reply: "newly failing: `TestC`",
		},
		"against the base: the target fixed while an earlier failure stays": {
			sess: prSession, up: contract.ResultUpload{Evidence: againstBase(failed, contract.BaselineCounts{Fixed: 1, StillFailing: 1, Passing: 3}, fixedA, oldFailure), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "fails_where_base_failed", conclusion: "neutral", reply: "only where the base failed",
		},
		"against the base: the failing test deleted, verify passes": {
			sess: prSession, up: contract.ResultUpload{Evidence: againstBase(passed, contract.BaselineCounts{Removed: 1, NotFixed: 1, Passing: 3}, deletedA), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "not_fixed", conclusion: "failure", reply: "Not fixed: the change removed or skipped `TestA`",
		},
		"against the base: the failing test skipped, verify passes": {
			sess: prSession, up: contract.ResultUpload{Evidence: againstBase(passed, contract.BaselineCounts{Skipped: 1, NotFixed: 1, Passing: 3}, skippedA), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "not_fixed", conclusion: "failure", reply: "`TestA`",
		},
		"against the base: verified but not reproduced: changed, as a draft": {
			sess: prSession, up: contract.ResultUpload{Evidence: reproduce(contract.Reproduction{Why: "no test file in the change"}), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "end changed"},
			outcome: session.Changed, reason: "not_reproduced", conclusion: "neutral", reply: "not reproduced",
		},
		"against the base: reproduced": {
			sess: prSession, up: contract.ResultUpload{Evidence: reproduce(contract.Reproduction{Reproduced: true, Tests: []string{"TestA"}}), Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true", "end changed"},
			outcome: session.Changed, reason: "changed", conclusion: "success",
		},
		"against the base: unavailable, verify failed": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeVerifyFailed, Commands: failed,
				Baseline: &contract.BaselineComparison{Status: contract.BaselineUnavailable, Why: "the base's verify timed out"}}, Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "annotate 5", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "verification_failed", conclusion: "failure",
		},
		"issue session: its check run goes on the commit": {
			sess: issueSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true", "check run on c0ffee", "end changed"},
			outcome: session.Changed, reason: "changed",
		},
		"branch session whose announcing is still in flight: no check run of its own": {
			// Its check run is the pinned head's, created by the announcing
			// (decision 0048); the sync its record queues concludes it.
			sess: func() store.Session {
				s := prSession
				s.IsPR, s.Number, s.CheckRunID, s.TriggerInfo = false, 0, 0, `{"branch":"feature"}`
				return s
			}(),
			up:      contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeVerifyFailed, Commands: failed}, Manifest: change},
			calls:   []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=false", "end verification_failed"},
			outcome: session.VerificationFailed, reason: "verification_failed",
		},
		"replay after the commit: not committed again": {
			sess:  func() store.Session { s := prSession; s.CommitSHA = "c0ffee"; return s }(),
			up:    contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			calls: []string{"config", "attest c0ffee", "push c0ffee verified=true", "end changed"}, outcome: session.Changed, reason: "changed",
		},
		"replay after the push: neither again": {
			sess: func() store.Session {
				s := issueSession
				s.CommitSHA, s.Branch = "c0ffee", "inspect/7-abcdefgh"
				return s
			}(),
			up:    contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			calls: []string{"config", "attest c0ffee", "check run on c0ffee", "end changed"}, outcome: session.Changed, reason: "changed",
		},
		"cancelled while committing: stops after recording the commit": {
			sess: prSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			doneAfter: "commit", calls: []string{"config", "commit 1 files on pin0"},
		},
		"cancelled while pushing: stops after recording the branch": {
			sess: issueSession, up: contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK, Commands: passed}, Manifest: change},
			doneAfter: "push", calls: []string{"config", "commit 1 files on pin0", "attest c0ffee", "push c0ffee verified=true"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeReport{cfgErr: tc.cfgErr, doneAfter: tc.doneAfter, sess: tc.sess}
			if err := decide(context.Background(), f, tc.sess, spec, tc.up); err != nil {
				t.Fatalf("decide: %v", err)
			}
			if !slices.Equal(f.calls, tc.calls) {
				t.Fatalf("calls\n got %q\nwant %q", f.calls, tc.calls)
			}
			if tc.outcome == "" {
				if f.ended != nil {
					t.Fatalf("ended %+v; a session that ended meanwhile must not be ended again", *f.ended)
				}
				return
			}
			if f.ended == nil || f.ended.outcome != tc.outcome || f.ended.reason != tc.reason {
				t.Fatalf("ended %+v, want %s/%s", f.ended, tc.outcome, tc.reason)
			}
			if !strings.Contains(f.ended.reply, tc.reply) {
				t.Fatalf("reply %q does not mention %q", f.ended.reply, tc.reply)
			}
			if got := verdict.Conclusion(f.ended.outcome, f.ended.reason); tc.conclusion != "" && got != tc.conclusion {
				t.Fatalf("check run conclusion %q, want %q", got, tc.conclusion)
			}
		})
	}
}

// A failure to sign or keep the provenance is returned for the worker to
// retry, before anything is pushed: a change is never reported without
// the attestation a configured server promises.
func TestReportAttestFailureStopsBeforeThePush(t *testing.T) {
	f := &fakeReport{attestErr: errors.New("disk full")}
	sess := store.Fixture(session.Reporting, store.Session{ID: "s1", IsPR: true, RepoName: "widgets", CheckRunID: 5})
	up := contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK}, Manifest: &contract.Manifest{Files: []contract.FileChange{{Path: "a.go", Mode: "100644"}}}}
	err := decide(context.Background(), f, sess, contract.Spec{PinnedSHA: "pin0", Limits: contract.Limits{MaxChangedFiles: 10, MaxChangeBytes: 1 << 20}}, up)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the attestation's failure", err)
	}
	if want := []string{"config", "commit 1 files on pin0", "attest c0ffee"}; !slices.Equal(f.calls, want) || f.ended != nil {
		t.Fatalf("calls %q (ended %v), want %q", f.calls, f.ended, want)
	}
}

// A store or GitHub failure is returned for the worker to retry, and the
// session is not ended.
func TestReportResultReturnsFailuresForRetry(t *testing.T) {
	f := &fakeReport{cfgErr: errors.New("connection reset")}
	up := contract.ResultUpload{Evidence: contract.Evidence{Outcome: contract.OutcomeOK}, Manifest: &contract.Manifest{Files: []contract.FileChange{{Path: "a.go", Mode: "100644"}}}}
	err := decide(context.Background(), f, store.Session{ID: "s1", IsPR: true}, contract.Spec{}, up)
	if err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v, want the config read's failure", err)
	}
	if f.ended != nil {
		t.Fatalf("ended %+v on a passing failure", *f.ended)
	}
}
