package supervisor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// reproducingAgent fixes Add, adds a test that fails without the fix,
// changes the existing test file and deletes a file that is not a test.
const reproducingAgent = `set -eu
sed -i 's/return a + b + 1/return a + b/' calc.go
rm obsolete.txt
cat > calc_zero_test.go <<'GO'
package widgets

import "testing"

func TestAddZero(t *testing.T) {
	if got := Add(0, 0); got != 0 {
		t.Errorf("Add(0, 0) = %d, want 0", got)
	}
}
GO
printf '\n// The tests above.\n' >> calc_test.go
`

// Reproduce first (decision 0082): verify runs again on the pinned commit
// with only the change's test files. There the test the change adds fails
// (and so does the existing TestAdd: calc.go is the pinned one), while
// the change itself, its commands and its tests stay as verify left them.
func TestTheReproduceRunHasTheChangesTestsWithoutItsFix(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{"agent/reproduce.sh": reproducingAgent})
	spec := ch.Spec("sess-r1", "sess-r1-a1", sha, []string{"sh", "agent/reproduce.sh"},
		command("test", 5*time.Minute, "go", "test", "-json", "./..."),
		// The pinned commit's file, which the change deletes, is there.
		command("obsolete", time.Minute, "sh", "-c", "test -e obsolete.txt && echo obsolete-present || echo obsolete-absent"))
	spec.Reproduce = true
	h := newHarness(t, ch, spec)
	u := h.result(t, h.run(t, context.Background()))
	ev := u.Evidence
	if ev.Outcome != contract.OutcomeOK || ev.Partial {
		t.Fatalf("outcome %s (partial %v): %s\n%+v", ev.Outcome, ev.Partial, ev.Reason, ev.Commands)
	}
	// The session's own commands and tests are the agent's and verify's.
	var names []string
	for _, c := range ev.Commands {
		names = append(names, string(c.Phase)+":"+c.Name)
	}
	if want := []string{"agent:agent", "verify:test", "verify:obsolete"}; !slices.Equal(names, want) {
		t.Errorf("commands %v, want %v", names, want)
	}
	if !strings.Contains(ev.Commands[2].OutputTail, "obsolete-absent") {
		t.Errorf("verify saw the file the change deletes: %q", ev.Commands[2].OutputTail)
	}
	if ev.Tests == nil || ev.Tests.Failed != 0 || ev.Tests.Passed != 3 {
		t.Errorf("verify's tests %+v", ev.Tests)
	}
	var paths []string
	for _, f := range u.Manifest.Files {
		paths = append(paths, f.Path)
	}
	slices.Sort(paths)
	if want := []string{"calc.go", "calc_test.go", "calc_zero_test.go", "obsolete.txt"}; !slices.Equal(paths, want) {
		t.Errorf("the change %v, want %v", paths, want)
	}

	run := ev.Reproduce
	if run == nil || run.Skipped != "" {
		t.Fatalf("reproduce run %+v", run)
	}
	if want := []string{"calc_test.go", "calc_zero_test.go"}; !slices.Equal(slices.Sorted(slices.Values(run.TestFiles)), want) {
		t.Errorf("test files %v, want %v", run.TestFiles, want)
	}
	names = nil
	for _, c := range run.Commands {
		names = append(names, string(c.Phase)+":"+c.Name)
	}
	if want := []string{"verify:test", "verify:obsolete"}; !slices.Equal(names, want) || run.Commands[0].ExitCode == 0 {
		t.Fatalf("reproduce commands %v (%+v), want %v failing first", names, run.Commands, want)
	}
	if !strings.Contains(run.Commands[1].OutputTail, "obsolete-present") {
		t.Errorf("the reproduce run lacks the pinned commit's file the change deletes: %q", run.Commands[1].OutputTail)
	}
	got := map[string]contract.TestOutcome{}
	if run.Tests != nil {
		for _, r := range run.Tests.Results {
			got[r.Name] = r.Outcome
		}
	}
	want := map[string]contract.TestOutcome{"example.com/widgets.TestAdd": contract.TestFailed,
		"example.com/widgets.TestSub": contract.TestPassed, "example.com/widgets.TestAddZero": contract.TestFailed}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reproduce tests %v, want %v", got, want)
	}
	r := contract.Reproduce(run, ev.Tests)
	if !r.Reproduced || !slices.Contains(r.Tests, "example.com/widgets.TestAddZero") {
		t.Errorf("judged %+v", r)
	}
}

// A change with no test file has nothing to reproduce with: no run.
func TestAChangeWithoutATestFileSkipsTheReproduceRun(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.SeedGoRepo()
	spec := ch.Spec("sess-r2", "sess-r2-a1", sha, []string{"sh", "agent/fix.sh"},
		command("test", 5*time.Minute, "go", "test", "-json", "./..."))
	spec.Reproduce = true
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	if ev.Reproduce == nil || ev.Reproduce.Skipped != contract.ReproduceSkippedNoTestFile || len(ev.Reproduce.Commands) != 0 || ev.Reproduce.Tests != nil {
		t.Errorf("reproduce %+v", ev.Reproduce)
	}
	if len(ev.Commands) != 2 {
		t.Errorf("commands %+v", ev.Commands)
	}
	if r := contract.Reproduce(ev.Reproduce, ev.Tests); r.Reproduced || r.Why != contract.ReproduceNoTestFile {
		t.Errorf("judged %+v", r)
	}
}

// The reproduce run is bounded by the session's deadline, and a run the
// deadline cuts short leaves the session's outcome verify's: here verify
// passes at once with the change's fix.txt, and on the base, without it,
// the same command waits past the deadline.
func TestAReproduceRunPastTheDeadlineKeepsVerifysOutcome(t *testing.T) {
	ch := channeltest.New(t)
	ch.SeedGoRepo()
	sha := ch.Seed(map[string]string{"agent/fix-and-test.sh": "set -eu\necho fixed > fix.txt\necho 'package widgets' > fix_test.go\n"})
	spec := ch.Spec("sess-r3", "sess-r3-a1", sha, []string{"sh", "agent/fix-and-test.sh"},
		command("check", 10*time.Minute, "sh", "-c", "test -e fix.txt || exec sleep 600"))
	spec.Reproduce = true
	// Ten times what the session takes up to the reproduce run's command
	// on a quiet machine (under a second), and all the test waits.
	spec.Limits.Timeout = contract.Duration(10 * time.Second)
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeOK || ev.Partial || ev.Reason != "" {
		t.Fatalf("outcome %s (partial %v): %s", ev.Outcome, ev.Partial, ev.Reason)
	}
	run := ev.Reproduce
	if run == nil || !strings.HasPrefix(run.Skipped, "it was cut short: the session's deadline passed") {
		t.Fatalf("reproduce run %+v", run)
	}
	if len(run.Commands) != 1 || !run.Commands[0].TimedOut {
		t.Errorf("reproduce commands %+v", run.Commands)
	}
	if len(ev.Commands) != 2 || ev.Commands[1].ExitCode != 0 {
		t.Errorf("commands %+v", ev.Commands)
	}
	if r := contract.Reproduce(run, ev.Tests); r.Reproduced || !strings.HasPrefix(r.Why, contract.ReproduceDidNotRun+": it was cut short") {
		t.Errorf("judged %+v", r)
	}
}

// The reproduce run gets what setup left in the workspace as setup left
// it (not the agent's edit there), and services of its own, fresh on its
// workspace in a fresh environment (verify's port is free again), kept
// apart from the session's.
func TestTheReproduceRunGetsSetupsOutputsAndFreshServices(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		".gitignore":     "node_modules/\n",
		"svc/greeter.pl": perlServe,
		"test/ask.pl":    perlAsk,
		// A test file for the change, and the agent's edit of what setup
		// installed, which the service prefers.
		"agent/edit.sh": "#!/bin/sh\nset -e\necho 'one more' > test/cases.txt\necho hello > node_modules/greeting/local.txt\n",
	})
	spec := ch.Spec("sess-r4", "sess-r4-a1", sha, []string{"sh", "agent/edit.sh"},
		command("greets", time.Minute, "perl", "test/ask.pl", "7100", "goodbye"))
	spec.Setup = []contract.Command{command("install", time.Minute, "sh", "-c", "mkdir -p node_modules/greeting && echo goodbye > node_modules/greeting/index.txt")}
	spec.Services = []contract.Service{{
		Name:         "greeter",
		Argv:         []string{"perl", "svc/greeter.pl", "7100", "node_modules/greeting/local.txt", "node_modules/greeting/index.txt"},
		Ready:        contract.ServiceReady{TCP: 7100},
		ReadyTimeout: contract.Duration(30 * time.Second),
	}}
	spec.Reproduce = true
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s (%s)\ncommands %+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	run := ev.Reproduce
	if run == nil || run.Skipped != "" || len(run.Commands) != 1 {
		t.Fatalf("reproduce run %+v", run)
	}
	if c := run.Commands[0]; c.ExitCode != 0 || !strings.Contains(c.OutputTail, "7100 answered: goodbye") {
		t.Errorf("the reproduce run's test: %+v, want its service to answer setup's goodbye", c)
	}
	if len(run.Services) != 1 || !run.Services[0].Ready || run.Services[0].Phase != contract.PhaseVerify {
		t.Errorf("the reproduce run's services %+v", run.Services)
	}
	if len(ev.Services) != 1 || !ev.Services[0].Ready {
		t.Errorf("the session's services %+v, want verify's greeter alone", ev.Services)
	}
}
