package supervisor

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/internal/channeltest"
)

// otherUIDs are host uids that are not the sandbox's: nobody, as host
// daemons run, and an arbitrary local user's.
var otherUIDs = []uint32{65534, 12345}

// asUID runs argv as uid (and gid uid, no groups) and returns its combined
// output and error. Only root can do this.
func asUID(uid uint32, argv ...string) (string, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func wantMode(t *testing.T, path string, mode os.FileMode, uid uint32) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != mode {
		t.Errorf("%s has mode %o, want %o", path, got, mode)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid {
		t.Errorf("%s is owned by uid %d, want %d", path, st.Uid, uid)
	}
}

// The egress socket is the sandbox uid's, mode 0600: another uid cannot
// connect to it (a root test proves it by trying), while the sandbox uid
// can.
func TestOnlyTheSandboxUIDCanConnectToTheEgressSocket(t *testing.T) {
	uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
	if os.Geteuid() == 0 {
		uid, gid = DefaultSandboxID, DefaultSandboxID
	}
	e, err := startEgress(filepath.Join(channeltest.WorkDir(t), "egress"), "", uid, gid, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("answered"))
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	wantMode(t, e.sock, 0o600, uid)
	if os.Geteuid() != 0 {
		return // one uid only: the mode above is what keeps the others out
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal("the identity tests use curl to connect as another uid")
	}
	out, err := asUID(uid, curl, "-sS", "--unix-socket", e.sock, "http://egress/v1/x")
	if err != nil || out != "answered" {
		t.Fatalf("the sandbox uid could not use the socket: %v %q", err, out)
	}
	for _, other := range otherUIDs {
		// It reaches the socket's path (so what refuses it is the socket's
		// mode, not a directory on the way)...
		if out, err := asUID(other, "test", "-S", e.sock); err != nil {
			t.Fatalf("uid %d cannot even see the socket, so this test would prove nothing: %v %q", other, err, out)
		}
		// ...and cannot connect.
		out, err := asUID(other, curl, "-sS", "--unix-socket", e.sock, "http://egress/v1/x")
		if err == nil || strings.Contains(out, "answered") || !strings.Contains(out, "Couldn't connect") {
			t.Errorf("uid %d connected to the egress socket: %v %q", other, err, out)
		}
	}
}

// An attempt's workspace is the sandbox uid's, 0700: another uid (nobody
// among them) can neither read it nor plant a file in it.
func TestAnotherUIDCannotReadOrPlantAFileInTheWorkspace(t *testing.T) {
	ch := channeltest.New(t)
	sha := ch.Seed(map[string]string{"secret.txt": "private\n", "agent.sh": "echo written > mine.txt\n"})
	spec := ch.Spec("sess-id", "sess-id-a1", sha, []string{"sh", "agent.sh"})
	h := newHarness(t, ch, spec) // KeepWorkspace: the directory stays as the run left it
	ev := h.result(t, h.run(t, context.Background())).Evidence
	if ev.Outcome != contract.OutcomeOK {
		t.Fatalf("outcome %s: %s", ev.Outcome, ev.Reason)
	}
	attempt := channeltest.AttemptDir(t, h.workDir)
	ws := filepath.Join(attempt, "workspace")
	wantMode(t, ws, 0o700, h.wantUID())
	for _, private := range []string{"git", "home"} {
		wantMode(t, filepath.Join(attempt, private), 0o700, uint32(os.Geteuid()))
	}
	if os.Geteuid() != 0 {
		return // one uid only: the modes above are what keep the others out
	}
	for _, other := range otherUIDs {
		if out, err := asUID(other, "cat", filepath.Join(ws, "secret.txt")); err == nil || strings.Contains(out, "private") {
			t.Errorf("uid %d read the workspace: %q", other, out)
		}
		if out, err := asUID(other, "ls", ws); err == nil {
			t.Errorf("uid %d listed the workspace: %q", other, out)
		}
		planted := filepath.Join(ws, "planted.txt")
		if out, err := asUID(other, "sh", "-c", `echo planted > "$0"`, planted); err == nil {
			t.Errorf("uid %d planted a file in the workspace: %q", other, out)
		}
		if _, err := os.Lstat(planted); err == nil {
			t.Errorf("uid %d's file is in the workspace", other)
		}
	}
}
