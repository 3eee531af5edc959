package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// pgBin is where the server binaries a postgres service runs are: the
// host's newest PostgreSQL under /usr/lib/postgresql (.ci/ensure-postgres
// installs it), in the host toolchain's /usr, which the sandbox has
// read-only.
var pgBin = func() string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		return "/usr/lib/postgresql/15/bin"
	}
	slices.SortFunc(found, func(a, b string) int { return pgMajor(a) - pgMajor(b) })
	return filepath.Dir(found[len(found)-1])
}()

func pgMajor(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(bin))))
	return n
}

// pgTestSource is a Go test that speaks just enough of PostgreSQL's wire
// protocol (a StartupMessage, then AuthenticationOk) to prove a PostgreSQL
// server answers on 127.0.0.1:5432.
const pgTestSource = `package pg

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

func TestPostgresAnswersOnLoopback(t *testing.T) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:5432", 5*time.Second)
	if err != nil {
		t.Fatalf("no PostgreSQL on 127.0.0.1:5432: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	params := "user\x00postgres\x00database\x00postgres\x00\x00"
	msg := make([]byte, 8, 8+len(params))
	binary.BigEndian.PutUint32(msg, uint32(8+len(params)))
	binary.BigEndian.PutUint32(msg[4:], 196608) // protocol 3.0
	if _, err := c.Write(append(msg, params...)); err != nil {
		t.Fatal(err)
	}
	resp := make([]byte, 9)
	if _, err := io.ReadFull(c, resp); err != nil {
		t.Fatalf("reading the server's answer: %v", err)
	}
	if resp[0] != 'R' || binary.BigEndian.Uint32(resp[5:]) != 0 {
		t.Fatalf("answer %q, want AuthenticationOk ('R', code 0)", resp)
	}
	t.Log("PostgreSQL answered: AuthenticationOk")
}
`

var (
	pgTestOnce sync.Once
	pgTestBin  []byte
	pgTestErr  error
)

// pgTestBinary is the Go test above, compiled on the host (with its warm
// build cache) into a static test binary the repository carries: a cold
// `go test` in the sandbox would spend most of the test compiling the
// standard library.
func pgTestBinary(t testing.TB) []byte {
	t.Helper()
	pgTestOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pgtest-")
		if err != nil {
			pgTestErr = err
			return
		}
		defer os.RemoveAll(dir)
		for name, content := range map[string]string{"go.mod": "module example.com/pg\n\ngo 1.22\n", "pg_test.go": pgTestSource} {
			if pgTestErr = os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); pgTestErr != nil {
				return
			}
		}
		cmd := exec.Command("go", "test", "-c", "-o", "pg.test", ".")
		cmd.Dir = dir // the host's own settings, so its warm build cache serves
		if out, err := cmd.CombinedOutput(); err != nil {
			pgTestErr = fmt.Errorf("go test -c: %v\n%s", err, out)
			return
		}
		pgTestBin, pgTestErr = os.ReadFile(filepath.Join(dir, "pg.test"))
	})
	if pgTestErr != nil {
		t.Fatal(pgTestErr)
	}
	return pgTestBin
}

// pgRepo seeds a repository with the test (source and binary) and returns
// its commit.
func pgRepo(t testing.TB, ch *channeltest.Server) string {
	t.Helper()
	return ch.Seed(map[string]string{
		"go.mod":        "module example.com/pg\n\ngo 1.22\n",
		"pg_test.go":    pgTestSource,
		"bin/pg.test":   string(pgTestBinary(t)),
		"agent/idle.sh": "#!/bin/sh\nprintf 'Nothing to change.\\n' > \"$INSPECT_ANSWER_FILE\"\n",
	})
}

// pgCache is where the service's setup puts the cluster: a cache of the
// snapshot's, which a cold session gets empty.
const pgCache = "/cache/pg"

// postgresService is a postgres service as a repo's config gives it, with
// marker in its argv (its process title keeps it: cluster_name), so the
// host's /proc can tell its processes from any other PostgreSQL's.
func postgresService(marker string) contract.Service {
	return contract.Service{
		Name: "postgres",
		Argv: []string{pgBin + "/postgres", "-D", pgCache + "/data", "-k", "",
			"-c", "listen_addresses=127.0.0.1", "-c", "port=5432", "-c", "fsync=off", "-c", "cluster_name=" + marker},
		// A port that accepts is not yet a server that answers ("the
		// database system is starting up"): pg_isready says when it does.
		Ready:        contract.ServiceReady{Argv: []string{pgBin + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres"}},
		ReadyTimeout: contract.Duration(time.Minute),
		Setup:        []string{pgBin + "/initdb", "-D", pgCache + "/data", "--auth=trust", "-U", "postgres", "--no-sync"},
		SetupTimeout: contract.Duration(2 * time.Minute),
	}
}

// pgSpec is a session on the repository whose verify runs the compiled
// PostgreSQL test, with svcs as its services (and their setup in the
// snapshot's, as the config puts it).
func pgSpec(ch *channeltest.Server, id, sha string, svcs ...contract.Service) contract.Spec {
	spec := ch.Spec(id, id+"-a1", sha, []string{"sh", "agent/idle.sh"},
		// The fixture cannot commit an executable mode: the binary runs
		// from the command's own /tmp.
		command("pg test", time.Minute, "sh", "-c", "cp bin/pg.test /tmp/pg.test && chmod +x /tmp/pg.test && exec /tmp/pg.test -test.v"))
	spec.Snapshot = &contract.Snapshot{Caches: []contract.Cache{{Path: pgCache, Lockfiles: []string{"go.mod"}}}}
	for _, s := range svcs {
		if len(s.Setup) > 0 {
			spec.Snapshot.Setup = append(spec.Snapshot.Setup, contract.Command{Name: contract.ServiceSetupName(s.Name), Argv: s.Setup, Timeout: s.SetupTimeout})
		}
	}
	spec.Services = svcs
	return spec
}

// sandboxProcesses lists the host's live processes of the sandbox uid
// whose command line holds marker.
func sandboxProcesses(t testing.TB, marker string) []string {
	t.Helper()
	var left []string
	for _, pid := range channeltest.ProcessesWith(marker) {
		status, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
		if err == nil && strings.Contains(string(status), fmt.Sprintf("\nUid:\t%d\t", DefaultSandboxID)) {
			left = append(left, pid)
		}
	}
	return left
}

func needPostgres(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(pgBin + "/postgres"); err != nil {
		t.Fatalf("PostgreSQL's server binaries are needed under /usr/lib/postgresql (run .ci/ensure-postgres): %v", err)
	}
}

func TestAPostgresServiceServesVerifyOnTheSessionsOwnLoopback(t *testing.T) {
	needPostgres(t)
	ch := channeltest.New(t)
	sha := pgRepo(t, ch)
	marker := fmt.Sprintf("inspect-svc-%d", time.Now().UnixNano())

	// Without the service the test fails: the host's own PostgreSQL on its
	// 127.0.0.1:5432 is out of the sandbox's reach.
	without := newHarness(t, ch, pgSpec(ch, "sess-pg0", sha))
	ev := without.result(t, without.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeVerifyFailed || !strings.Contains(ev.Commands[len(ev.Commands)-1].OutputTail, "no PostgreSQL on 127.0.0.1:5432") {
		t.Fatalf("without the service: outcome %s (%s), want verify_failed with no PostgreSQL reached\n%+v", ev.Outcome, ev.Reason, ev.Commands)
	}

	with := newHarness(t, ch, pgSpec(ch, "sess-pg1", sha, postgresService(marker)))
	// The host's view while the session runs: its PostgreSQL processes
	// (the marker is in their titles), as the sandbox uid.
	seen := make(chan int)
	done := make(chan struct{})
	go func() {
		most := 0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			most = max(most, len(sandboxProcesses(t, marker)))
			select {
			case <-done:
				seen <- most
				return
			case <-tick.C:
			}
		}
	}()
	ev = with.result(t, with.run(t, context.Background())).Evidence
	close(done)
	if most := <-seen; most == 0 {
		t.Error("no PostgreSQL process of the sandbox uid was seen on the host while the session ran, so the check below proves nothing")
	}
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("with the service: outcome %s: %s\ncommands %+v\nservices %+v", ev.Outcome, ev.Reason, ev.Commands, ev.Services)
	}
	var names []string
	for _, c := range ev.Commands {
		names = append(names, string(c.Phase)+":"+c.Name)
	}
	// Cold: the service's setup ran in verify, just before the service,
	// and not among the setup phase's snapshot steps.
	if want := "[agent:agent verify:service postgres setup verify:pg test]"; fmt.Sprint(names) != want {
		t.Errorf("commands %v, want %s", names, want)
	}
	if !strings.Contains(ev.Commands[2].OutputTail, "AuthenticationOk") {
		t.Errorf("the test's output: %q", ev.Commands[2].OutputTail)
	}
	if len(ev.Services) != 1 {
		t.Fatalf("services %+v", ev.Services)
	}
	svc := ev.Services[0]
	if svc.Name != "postgres" || svc.Phase != contract.PhaseVerify || !svc.Ready || svc.Failure != "" || svc.Signal != "SIGKILL" {
		t.Errorf("service %+v, want postgres ready for verify, stopped by the supervisor", svc)
	}
	if !strings.Contains(svc.OutputTail, "database system is ready to accept connections") {
		t.Errorf("the service's output tail: %q", svc.OutputTail)
	}
	// Stopped with the session: nothing of it is left on the host.
	if left := sandboxProcesses(t, marker); len(left) > 0 {
		t.Errorf("service processes left on the host: %v", left)
	}
}

func TestAServiceNeverReadyEndsTheSessionErrorNamingIt(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"README.md": "hi\n", "agent/idle.sh": "#!/bin/sh\ntrue\n"})
	marker := fmt.Sprintf("inspect-svc-never-%d", time.Now().UnixNano())
	spec := ch.Spec("sess-nr", "sess-nr-a1", sha, []string{"sh", "agent/idle.sh"}, command("never", time.Minute, "true"))
	spec.Services = []contract.Service{{
		Name:         "fakedb",
		Argv:         []string{"sh", "-c", `echo "fakedb: starting, but never listening"; while :; do sleep 1; done`, marker},
		Ready:        contract.ServiceReady{TCP: 5433},
		ReadyTimeout: contract.Duration(2 * time.Second),
	}}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "the service fakedb was not ready within 2s") {
		t.Fatalf("outcome %s: %q, want error naming fakedb", ev.Outcome, ev.Reason)
	}
	f := ev.FailedService()
	if f == nil || f.Name != "fakedb" || f.Ready || !strings.Contains(f.OutputTail, "fakedb: starting, but never listening") {
		t.Errorf("failed service %+v", f)
	}
	for _, c := range ev.Commands {
		if c.Name == "never" {
			t.Errorf("verify ran after its service failed: %+v", c)
		}
	}
	if left := sandboxProcesses(t, marker); len(left) > 0 {
		t.Errorf("service processes left on the host: %v", left)
	}
}

func TestAServiceThatExitsEndsTheSessionErrorNamingIt(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"README.md": "hi\n", "agent/idle.sh": "#!/bin/sh\ntrue\n"})
	spec := ch.Spec("sess-ex", "sess-ex-a1", sha, []string{"sh", "agent/idle.sh"}, command("waits", time.Minute, "sleep", "600"))
	// Ready as soon as it runs (a file it writes), then it dies during
	// verify.
	spec.Services = []contract.Service{{
		Name:         "flaky",
		Argv:         []string{"sh", "-c", `echo flaky up > /workspace/.flaky-up; sleep 1; echo "flaky: out of memory"; exit 3`},
		Ready:        contract.ServiceReady{Argv: []string{"test", "-e", "/workspace/.flaky-up"}},
		ReadyTimeout: contract.Duration(30 * time.Second),
	}}
	h := newHarness(t, ch, spec)
	start := time.Now()
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeError || !strings.Contains(ev.Reason, "the service flaky exited while the session still needed it (exited with status 3)") {
		t.Fatalf("outcome %s: %q", ev.Outcome, ev.Reason)
	}
	if time.Since(start) > 2*time.Minute {
		t.Errorf("the session ran %v: the verify command should have been cut when the service died", time.Since(start))
	}
	f := ev.FailedService()
	if f == nil || f.Name != "flaky" || !f.Ready || f.ExitCode != 3 || !strings.Contains(f.OutputTail, "flaky: out of memory") {
		t.Errorf("failed service %+v", f)
	}
}

func TestPromptListsServices(t *testing.T) {
	spec := promptSpec()
	spec.Services = []contract.Service{
		{Name: "postgres", Argv: []string{"postgres", "-D", "/cache/pg"}, Ready: contract.ServiceReady{TCP: 5432}, ForAgent: true},
		{Name: "worker", Argv: []string{"./worker"}, Ready: contract.ServiceReady{Argv: []string{"true"}}},
	}
	p := buildPrompt(&spec)
	for _, want := range []string{
		"\n## Services\n",
		"- postgres (for you and during verification, on port 5432): `postgres -D /cache/pg`\n",
		"- worker (during verification): `./worker`\n",
		// Decision 0057: verify's services are fresh ones.
		"Verification starts its own, fresh, as setup left their data: nothing you or they write outside your change reaches it.",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	spec.Services = nil
	if p := buildPrompt(&spec); strings.Contains(p, "## Services") {
		t.Error("a spec without services has a Services section")
	}
}

func TestAServiceWhoseSetupFailsEndsTheSessionErrorNamingIt(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"README.md": "hi\n", "agent/idle.sh": "#!/bin/sh\ntrue\n"})
	spec := ch.Spec("sess-sf", "sess-sf-a1", sha, []string{"sh", "agent/idle.sh"}, command("never", time.Minute, "true"))
	spec.Services = []contract.Service{{
		Name:         "db",
		Argv:         []string{"sleep", "600"},
		Ready:        contract.ServiceReady{TCP: 5432},
		ReadyTimeout: contract.Duration(time.Minute),
		Setup:        []string{"sh", "-c", "echo 'initdb: no space left on device'; exit 4"},
		SetupTimeout: contract.Duration(time.Minute),
	}}
	h := newHarness(t, ch, spec)
	ev := h.result(t, h.run(t, context.Background())).Evidence
	f := ev.FailedService()
	if ev.Outcome != contract.OutcomeError || f == nil || f.Name != "db" || f.Failure != "could not be set up: its setup exited with status 4" ||
		!strings.Contains(f.OutputTail, "no space left on device") {
		t.Fatalf("outcome %s (%s), failed service %+v", ev.Outcome, ev.Reason, f)
	}
}
