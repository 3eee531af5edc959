// Package pgtemp runs a private PostgreSQL server for one test, so a test
// may stop and start its database (an outage) without touching the shared
// server the other tests use. It needs the PostgreSQL server binaries
// (initdb, pg_ctl); missing binaries fail the test rather than skip it, as
// PostgreSQL being unavailable does elsewhere (internal/storetest).
//
// initdb and postgres refuse to run as root. When the test runs as root
// the instance runs as the "postgres" system user, in a directory owned by
// that user.
package pgtemp

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the readiness check
)

// BinDirEnv names a directory holding initdb and pg_ctl, overriding the
// search of /usr/lib/postgresql/*/bin and PATH.
const BinDirEnv = "INSPECT_TEST_PG_BINDIR"

// ReadyTimeout bounds how long Start and StartAgain wait for the server to
// accept connections.
const ReadyTimeout = 30 * time.Second

// Instance is one private PostgreSQL server. Its methods that fail call
// t.Fatal, so call them from the test's goroutine.
type Instance struct {
	t     testing.TB
	bin   string // directory holding initdb and pg_ctl
	dir   string // root of everything below; removed at cleanup
	data  string
	log   string // the server's own log (pg_ctl -l)
	port  int
	cred  *syscall.Credential // nil unless we run as root
	owner [2]int              // uid, gid to chown to, when cred != nil

	mu      sync.Mutex
	running bool
}

// Start creates, starts and waits for a fresh PostgreSQL instance that
// trusts every local connection as user postgres. It stops and removes the
// instance at the test's cleanup.
func Start(t testing.TB) *Instance {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatalf("pgtemp: %v", err)
	}
	in := &Instance{t: t, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtemp: running as root, PostgreSQL must run as another user: %v", err)
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("pgtemp: user postgres: %v", err)
		}
		// Groups empty and NoSetGroups false: root's supplementary groups
		// are dropped, as a login as postgres would have them.
		in.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		in.owner = [2]int{uid, gid}
	}
	// Our own directory rather than t.TempDir: t.TempDir's parent is mode
	// 0700 and owned by root, which the postgres user could not traverse.
	// os.TempDir (/tmp) is world-searchable.
	in.dir, err = os.MkdirTemp("", "pgtemp-")
	if err != nil {
		t.Fatalf("pgtemp: %v", err)
	}
	t.Cleanup(in.cleanup)
	if in.cred != nil {
		if err := os.Chown(in.dir, in.owner[0], in.owner[1]); err != nil {
			t.Fatalf("pgtemp: %v", err)
		}
	}
	in.data = filepath.Join(in.dir, "data")
	in.log = filepath.Join(in.dir, "server.log")
	sock := filepath.Join(in.dir, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		t.Fatalf("pgtemp: %v", err)
	}
	if in.cred != nil {
		if err := os.Chown(sock, in.owner[0], in.owner[1]); err != nil {
			t.Fatalf("pgtemp: %v", err)
		}
	}

	// --no-sync: a test database need not survive a power cut, and the
	// fsyncs are most of initdb's time.
	if out, err := in.run("initdb", "-D", in.data, "--auth=trust", "--username=postgres",
		"-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("pgtemp: initdb: %v\n%s", err, out)
	}

	// PostgreSQL cannot be told to take any free port and report it, so we
	// take one from the kernel and hand it over: another process could grab
	// it in between, which start retries around.
	var startErr error
	for range 3 {
		if in.port, err = freePort(); err != nil {
			t.Fatalf("pgtemp: %v", err)
		}
		// Settings go in postgresql.conf (later lines win over initdb's)
		// rather than pg_ctl -o, so no path is ever word-split by the
		// shell pg_ctl starts postgres with, and StartAgain needs no
		// options repeated.
		conf := fmt.Sprintf("\n# pgtemp\nport = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"+
			"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n",
			in.port, sock)
		if err := appendFile(filepath.Join(in.data, "postgresql.conf"), conf); err != nil {
			t.Fatalf("pgtemp: %v", err)
		}
		if startErr = in.start(); startErr == nil {
			return in
		}
		if !strings.Contains(in.serverLog(), "Address already in use") {
			break
		}
	}
	t.Fatalf("pgtemp: %v", startErr)
	return nil
}

// DSN is a URL for the instance's "postgres" database as user postgres.
func (in *Instance) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", in.port)
}

// Port is the TCP port the instance listens on (127.0.0.1), the same
// across StartAgain.
func (in *Instance) Port() int { return in.port }

// Running reports whether the instance is started.
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.running
}

// Stop shuts the server down in fast mode (open connections are ended,
// transactions rolled back) and returns once it has exited. Stopping a
// stopped instance does nothing.
func (in *Instance) Stop() {
	in.t.Helper()
	if err := in.stop(); err != nil {
		in.t.Fatalf("pgtemp: %v", err)
	}
}

// StartAgain starts a stopped instance on the same data and port, and waits
// until it accepts connections. Starting a running instance does nothing.
func (in *Instance) StartAgain() {
	in.t.Helper()
	if in.Running() {
		return
	}
	if err := in.start(); err != nil {
		in.t.Fatalf("pgtemp: %v", err)
	}
}

// Log is the server's own log so far.
func (in *Instance) Log() string { return in.serverLog() }

func (in *Instance) start() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.running {
		return nil
	}
	// -w: pg_ctl itself waits (up to -t seconds) for the server to accept
	// connections; the ping below confirms it over TCP, the way clients
	// connect.
	out, err := in.run("pg_ctl", "start", "-D", in.data, "-l", in.log, "-w",
		"-t", strconv.Itoa(int(ReadyTimeout/time.Second)))
	if err != nil {
		// A failed start can leave a server behind (pg_ctl gave up
		// waiting); stop it so the cleanup does not have to guess.
		_, _ = in.run("pg_ctl", "stop", "-D", in.data, "-m", "immediate", "-w")
		return fmt.Errorf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, in.serverLog())
	}
	in.running = true
	if err := in.waitReady(); err != nil {
		return fmt.Errorf("%v\nserver log:\n%s", err, in.serverLog())
	}
	return nil
}

func (in *Instance) stop() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.running {
		return nil
	}
	out, err := in.run("pg_ctl", "stop", "-D", in.data, "-m", "fast", "-w",
		"-t", strconv.Itoa(int(ReadyTimeout/time.Second)))
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	in.running = false
	return nil
}

// waitReady polls a real connection until it answers or ReadyTimeout
// passes.
func (in *Instance) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	db, err := sql.Open("pgx", in.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pingCtx)
		pingCancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres on port %d not ready after %s: %v", in.port, ReadyTimeout, err)
		case <-tick.C:
		}
	}
}

func (in *Instance) cleanup() {
	if err := in.stop(); err != nil {
		in.t.Errorf("pgtemp: %v", err)
	}
	if in.t.Failed() {
		in.t.Logf("pgtemp: server log:\n%s", in.serverLog())
	}
	if err := os.RemoveAll(in.dir); err != nil {
		in.t.Errorf("pgtemp: %v", err)
	}
}

// run runs one of the PostgreSQL programs, as postgres when we are root,
// and returns its output. The output goes to a file, not a pipe: pg_ctl
// start leaves a server running, and were it to inherit a pipe, waiting
// for the pipe's end would wait for the server to stop.
func (in *Instance) run(prog string, args ...string) (string, error) {
	outPath := filepath.Join(in.dir, prog+".out")
	f, err := os.Create(outPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cmd := exec.Command(filepath.Join(in.bin, prog), args...)
	cmd.Stdout, cmd.Stderr = f, f
	// The programs resolve their own directory and may chdir; the test's
	// working directory may not be readable by postgres.
	cmd.Dir = in.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC", "HOME=" + in.dir}
	if in.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: in.cred}
	}
	runErr := cmd.Run()
	out, _ := os.ReadFile(outPath) // best effort: only for messages
	return string(out), runErr
}

func (in *Instance) serverLog() string {
	b, err := os.ReadFile(in.log)
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	return string(b)
}

// binDir finds the directory of initdb and pg_ctl: BinDirEnv, the newest
// Debian-style /usr/lib/postgresql/<version>/bin, or PATH.
func binDir() (string, error) {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin") // the pattern is valid
	// Newest major version first; the names are integers ("15") or, before
	// PostgreSQL 10, "9.6", which ParseFloat orders correctly too.
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or PATH; install postgresql or set %s", BinDirEnv)
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
