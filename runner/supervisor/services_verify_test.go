package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// Issue 33, item 1: services that let verification lie. The services here
// are perl one-liners from the host's /usr (perl-base is in every Debian
// install), bound read-only into the sandbox like every toolchain.

// perlServe is a perl program serving, to every connection on
// 127.0.0.1:PORT (its first argument), one line: the first line of the
// first of the files its further arguments name that exists (as it reads
// at that moment), or "missing". A marker for the host's /proc can follow
// as a file that does not exist.
const perlServe = `use IO::Socket::INET; my ($port, @files) = @ARGV;
my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $port, Listen => 8, ReuseAddr => 1) or die "listen $port: $!";
while (my $c = $s->accept) { my $l = "missing\n"; for my $file (@files) { if (open(my $f, "<", $file)) { $l = <$f>; last } } print $c $l; close $c }`

// perlAsk connects to 127.0.0.1:PORT (its first argument), prints what it
// answers, and exits 0 only when that is its second argument: a repo's
// test of its service.
const perlAsk = `use IO::Socket::INET; my ($port, $want) = @ARGV;
my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port, Timeout => 5) or do { print "nothing answers on $port\n"; exit 1 };
my $l = <$c> // ""; chomp $l; print "$port answered: $l\n"; exit($l eq $want ? 0 : 1)`

// The class closed: a service of verify's reading what the agent left
// outside the change. Verify's services ran on the agent's workspace, so an
// agent that rewrote an ignored file a tracked service reads (under
// node_modules/, which setup fills) made verify pass while the committed
// change would fail. The review's variant was the same edit read by the
// service at start; this one is read per request, after the service is
// ready, so it also fails when only the start (not the whole run) is on
// the verify workspace.
func TestVerifysServicesRunOnTheVerifyWorkspaceNotTheAgents(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		".gitignore": "node_modules/\n",
		"README.md":  "greeter\n",
		// The repository's service: it serves what its dependency says.
		"svc/greeter.pl": perlServe,
		"test/ask.pl":    perlAsk,
		// The agent: one README line for the change, and a local override
		// of the dependency's greeting, which the service prefers (ignored,
		// so never part of the change).
		"agent/lie.sh": "#!/bin/sh\nset -e\necho 'a line' >> README.md\necho hello > node_modules/greeting/local.txt\necho done > \"$INSPECT_ANSWER_FILE\"\n",
	})
	spec := ch.Spec("sess-svcws", "sess-svcws-a1", sha, []string{"sh", "agent/lie.sh"},
		command("greets", time.Minute, "perl", "test/ask.pl", "7100", "hello"))
	// Setup installs the dependency as the pinned commit would have it:
	// its greeting is not the one the test wants.
	spec.Setup = []contract.Command{command("install", time.Minute, "sh", "-c", "mkdir -p node_modules/greeting && echo goodbye > node_modules/greeting/index.txt")}
	spec.Services = []contract.Service{{
		Name:         "greeter",
		Argv:         []string{"perl", "svc/greeter.pl", "7100", "node_modules/greeting/local.txt", "node_modules/greeting/index.txt"},
		Ready:        contract.ServiceReady{TCP: 7100},
		ReadyTimeout: contract.Duration(30 * time.Second),
	}}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed {
		t.Fatalf("outcome %s (%s), want verify_failed: the committed change leaves the greeting setup installed\ncommands %+v\nservices %+v", ev.Outcome, ev.Reason, ev.Commands, ev.Services)
	}
	last := ev.Commands[len(ev.Commands)-1]
	if last.Name != "greets" || !strings.Contains(last.OutputTail, "7100 answered: goodbye") {
		t.Errorf("verify's test: %+v, want the service to answer setup's goodbye", last)
	}
	if len(ev.Services) != 1 || ev.Services[0].Phase != contract.PhaseVerify || !ev.Services[0].Ready {
		t.Errorf("services %+v, want greeter ready for verify", ev.Services)
	}
}

// The class closed: anything the agent's phase started outliving it. The
// agent's services ran until the whole run ended, so a process one of
// them started for the agent (the review's: PostgreSQL's COPY … TO
// PROGRAM as superuser) was still there during change collection and
// verify, and answered verify's tests on the loopback. Here the repo's
// "api" service runs what lands in an ignored file, as COPY … TO PROGRAM
// runs a program; the agent has it start two listeners detached in ways
// the review did not try: `nohup … &` from the service's own script, and
// `setsid -f` (a new session, its parent gone at once). And a System V
// message queue (ipcmk), which no process holds: state of the shared IPC
// namespace that would outlive every process of the agent's phase.
//
// Verify gets fresh services instead: the agent's are stopped, whole,
// before the change is collected, verify runs in a new environment, and
// the for_agent service starts again on the verify workspace, its setup
// run again (a cold session) on the caches as setup left them.
func TestTheAgentsServicesAndWhatTheyStartedDoNotSurviveIntoVerify(t *testing.T) {
	ch := channeltest.New(t)
	marker := fmt.Sprintf("inspect-svc-planted-%d", time.Now().UnixNano())
	sha := ch.Seed(map[string]string{
		".gitignore": "run/\n",
		"README.md":  "api\n",
		// The service: it takes each program dropped into run/cmd and runs
		// it (and says so), as a database superuser's COPY … TO PROGRAM.
		"svc/api.sh": "#!/bin/sh\nmkdir -p run\nwhile :; do\n  if [ -f run/cmd ]; then mv run/cmd run/cmd.taken; echo 'api: running a program'; sh run/cmd.taken; fi\n  sleep 0.05\ndone\n",
		// Its setup refuses a directory already set up, as initdb does.
		"svc/setup.sh": "#!/bin/sh\nset -e\nif [ -e /cache/api/db ]; then echo 'setup: /cache/api/db exists'; exit 1; fi\nmkdir -p /cache/api && echo fresh > /cache/api/db\n",
		"svc/serve.pl": perlServe,
		"test/ask.pl":  perlAsk,
		// The agent: plants the program, waits until both listeners
		// answer, leaves a message queue, writes the cache's data over,
		// and changes one README line.
		"agent/plant.sh": `#!/bin/sh
set -e
cat > run/cmd.new <<EOF
nohup perl svc/serve.pl 7001 README.md ` + marker + ` >/dev/null 2>&1 &
setsid -f perl svc/serve.pl 7002 README.md ` + marker + ` >/dev/null 2>&1
EOF
mv run/cmd.new run/cmd
i=0
until perl test/ask.pl 7001 api && perl test/ask.pl 7002 api; do
  i=$((i+1)); [ $i -lt 200 ] || { echo 'the planted listeners never answered'; exit 1; }
  sleep 0.05
done
ipcmk -Q
echo planted > /cache/api/db
echo 'a line' >> README.md
echo done > "$INSPECT_ANSWER_FILE"
`,
	})
	spec := ch.Spec("sess-svcplant", "sess-svcplant-a1", sha, []string{"sh", "agent/plant.sh"},
		// The repository's tests pass only with a server on 7001 and 7002,
		// which the committed change does not have.
		command("api 7001", time.Minute, "perl", "test/ask.pl", "7001", "api"),
		command("api 7002", time.Minute, "perl", "test/ask.pl", "7002", "api"),
		command("no message queue", time.Minute, "sh", "-c", `q=$(ipcs -q | grep -c '^0x' || true); echo "queues: $q"; test "$q" = 0`),
		command("fresh data", time.Minute, "sh", "-c", `cat /cache/api/db; test "$(cat /cache/api/db)" = fresh`),
	)
	spec.Snapshot = &contract.Snapshot{Caches: []contract.Cache{{Path: "/cache/api", Lockfiles: []string{"README.md"}}}}
	spec.Services = []contract.Service{{
		Name:         "api",
		Argv:         []string{"sh", "svc/api.sh", marker},
		Ready:        contract.ServiceReady{Argv: []string{"test", "-d", "run"}},
		ReadyTimeout: contract.Duration(30 * time.Second),
		Setup:        []string{"sh", "svc/setup.sh"},
		SetupTimeout: contract.Duration(time.Minute),
		ForAgent:     true,
	}}
	spec.Snapshot.Setup = []contract.Command{{Name: contract.ServiceSetupName("api"), Argv: spec.Services[0].Setup, Timeout: spec.Services[0].SetupTimeout}}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence

	results := map[string]contract.CommandResult{}
	var names []string
	for _, c := range ev.Commands {
		results[c.Name] = c
		names = append(names, string(c.Phase)+":"+c.Name)
	}
	if a := results["agent"]; !a.Succeeded() {
		t.Fatalf("the agent did not plant its listeners: %+v\nservices %+v", a, ev.Services)
	}
	if ev.Outcome != contract.OutcomeVerifyFailed {
		t.Fatalf("outcome %s (%s), want verify_failed: nothing of the committed change answers on 7001 or 7002\ncommands %+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	for _, port := range []string{"7001", "7002"} {
		if r := results["api "+port]; r.Succeeded() || !strings.Contains(r.OutputTail, "nothing answers on "+port) {
			t.Errorf("verify's probe of %s: %+v, want nothing to answer", port, r)
		}
	}
	if r := results["no message queue"]; !r.Succeeded() {
		t.Errorf("the agent's message queue reached verify: %+v", r)
	}
	if r := results["fresh data"]; !r.Succeeded() {
		t.Errorf("verify's service ran on the agent's data: %+v", r)
	}
	// Cold: the service's setup ran before the agent's api and again,
	// before verify's, on the caches as setup left them.
	want := "[agent:service api setup agent:agent verify:service api setup verify:api 7001 verify:api 7002 verify:no message queue verify:fresh data]"
	if fmt.Sprint(names) != want {
		t.Errorf("commands %v, want %s", names, want)
	}
	if len(ev.Services) != 2 || ev.Services[0].Phase != contract.PhaseAgent || ev.Services[1].Phase != contract.PhaseVerify ||
		!ev.Services[0].Ready || !ev.Services[1].Ready || ev.Services[0].Signal != "SIGKILL" || ev.Services[1].Signal != "SIGKILL" {
		t.Errorf("services %+v, want api for the agent, then a fresh api for verify, each stopped by the supervisor", ev.Services)
	}
	if len(ev.Services) == 2 && (!strings.Contains(ev.Services[0].OutputTail, "api: running a program") || strings.Contains(ev.Services[1].OutputTail, "running a program")) {
		t.Errorf("the agent's api ran the program and verify's did not: %q, %q", ev.Services[0].OutputTail, ev.Services[1].OutputTail)
	}
	if left := sandboxProcesses(t, marker); len(left) > 0 {
		t.Errorf("planted processes left on the host: %v", left)
	}
}

// The class closed, on a restored session: verify's service starting on
// data the agent's phase wrote. The service keeps its data in a snapshot
// cache (as PostgreSQL keeps its cluster in /cache/pg); the cache was one
// writable view for the whole session, so what the agent (or its service)
// wrote there was what verify's service started on. Verify now gets the
// cache layers restored again (as setup left them: the overlay setup's
// state is frozen under), and the service's setup is not run again, since
// the snapshot brought its data.
func TestARestoredSessionsVerifyGetsTheCacheLayersAgain(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{
		"README.md":    "api\n",
		"svc/setup.sh": "#!/bin/sh\nset -e\nif [ -e /cache/api/db ]; then echo 'setup: /cache/api/db exists'; exit 1; fi\nmkdir -p /cache/api && echo layer > /cache/api/db\n",
		// The agent writes the service's data over, then changes a line.
		"agent/overwrite.sh": "#!/bin/sh\nset -e\necho planted > /cache/api/db\necho 'a line' >> README.md\necho done > \"$INSPECT_ANSWER_FILE\"\n",
	})
	svc := contract.Service{
		Name:         "api",
		Argv:         []string{"sleep", "600"},
		Ready:        contract.ServiceReady{Argv: []string{"test", "-e", "/cache/api/db"}},
		ReadyTimeout: contract.Duration(30 * time.Second),
		Setup:        []string{"sh", "svc/setup.sh"},
		SetupTimeout: contract.Duration(time.Minute),
		ForAgent:     true,
	}
	caches := []contract.Cache{{Path: "/cache/api", Lockfiles: []string{"svc/setup.sh"}}}
	setup := []contract.Command{{Name: contract.ServiceSetupName(svc.Name), Argv: svc.Setup, Timeout: svc.SetupTimeout}}

	workDir := channeltest.WorkDir(t)
	dir := filepath.Join(workDir, "snapshots")
	store, err := images.NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	buildDir := filepath.Join(workDir, "build")
	if err := os.Mkdir(buildDir, 0o755); err != nil {
		t.Fatal(err)
	}
	built, err := BuildSnapshot(context.Background(), SnapshotBuild{
		Repo:        contract.Repo{Owner: channeltest.Owner, Name: channeltest.Repo, CloneURL: ch.GitHub.GitDir(channeltest.Owner, channeltest.Repo), DefaultBranch: "main"},
		SHA:         sha,
		Setup:       setup,
		Caches:      caches,
		Store:       store,
		Version:     "test",
		WorkDir:     buildDir,
		SandboxPath: DefaultSandboxPath,
	})
	if err != nil {
		t.Fatal(err)
	}

	spec := ch.Spec("sess-svcrest", "sess-svcrest-a1", sha, []string{"sh", "agent/overwrite.sh"},
		command("layer data", time.Minute, "sh", "-c", `cat /cache/api/db; test "$(cat /cache/api/db)" = layer`))
	spec.Snapshot = &contract.Snapshot{Caches: caches, Setup: setup, Store: images.LayoutPrefix + dir, Digest: built.Snapshot.Digest.String()}
	spec.Services = []contract.Service{svc}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Workspace == nil || ev.Workspace.Source != contract.WorkspaceSnapshot {
		t.Fatalf("workspace %+v (outcome %s: %s), want one restored from the snapshot", ev.Workspace, ev.Outcome, ev.Reason)
	}
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s (%s), want ok: verify's cache is the snapshot's\ncommands %+v", ev.Outcome, ev.Reason, ev.Commands)
	}
	for _, c := range ev.Commands {
		if c.Name == contract.ServiceSetupName(svc.Name) {
			t.Errorf("a restored session ran the service's setup: %+v", c)
		}
	}
	if len(ev.Services) != 2 || ev.Services[0].Phase != contract.PhaseAgent || ev.Services[1].Phase != contract.PhaseVerify || !ev.Services[1].Ready {
		t.Errorf("services %+v, want api for the agent, then a fresh api for verify", ev.Services)
	}
}
