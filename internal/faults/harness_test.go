package faults_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver, to read the replicas' database

	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/internal/sandboxtest"
	"github.com/inspecthq/inspect/internal/servetest"
	"github.com/inspecthq/inspect/internal/webhookfixture"
)

const (
	owner          = "Codertocat"
	repoName       = "Hello-World"
	repoID         = 186853002
	installationID = 1
	requester      = "alice"
	requesterID    = 5000
)

func TestMain(m *testing.M) { servetest.Main(m) }

// fleet is one test's world: the GitHub stand-in, one PostgreSQL database
// and the `inspect serve` replicas sharing it.
type fleet struct {
	t        testing.TB
	gh       *fakegithub.Server
	bin      string
	dsn      string
	db       *sql.DB
	cfg      servetest.Config
	mu       sync.Mutex
	replicas []*servetest.Replica
	pulls    map[int]bool // numbers that are pull requests
}

// fleetOptions vary a fleet's setup.
type fleetOptions struct {
	// agent is the repo's agent command (argv, run in the sandbox); nil
	// changes nothing.
	agent []string
	// sample keeps the sample repository's own config: its stand-in agent
	// makes the failing test pass, and `go test` verifies it.
	sample bool
	// dsn is the database; "" makes a fresh one on the shared server.
	dsn string
	// set overrides config keys (servetest.Config.Set).
	set map[string]any
}

// newFleet makes the stand-in (a repo holding the sample repository, an
// installation, a writer) and a config for replicas with leases, timeouts
// and intervals made short enough for tests, on the local executor.
func newFleet(t testing.TB, o fleetOptions) *fleet {
	t.Helper()
	gh := fakegithub.New()
	t.Cleanup(gh.Close) // registered first, so it runs after the replicas are gone
	gh.AddInstallation(installationID, owner)
	gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repoName, DefaultBranch: "main", InstallationID: installationID, OwnerType: "User"})
	gh.AddUser(requester, requesterID, "User")
	gh.SetPermission(owner, repoName, requester, "write")
	files := examples.SampleRepo()
	agent := o.agent
	if agent == nil {
		agent = []string{"true"}
	}
	argv, err := json.Marshal(agent)
	if err != nil {
		t.Fatal(err)
	}
	if !o.sample {
		files[".github/inspect.yml"] = "agent:\n  preset: command\n  command: " + string(argv) + "\nverify: []\n"
	}
	gh.CommitFiles(owner, repoName, "main", files, "the sample repository")

	dsn := o.dsn
	if dsn == "" {
		dsn = servetest.NewDatabase(t)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // nothing to flush: reads only

	cfg := servetest.BaseConfig(t, gh, dsn)
	cfg.Set("github.web_url", gh.URL())
	cfg.Set("log_level", "info")
	cfg.Set("executor.kind", "local")
	cfg.Set("executor.max_concurrent", 4)
	cfg.Set("executor.work_dir", sandboxtest.ReachableDir(t))
	cfg.Set("snapshots.store", "")
	cfg.Set("workers.count", 4)
	cfg.Set("workers.lease", "3s")
	cfg.Set("workers.poll_interval", "100ms")
	cfg.Set("workers.retry_backoff", "200ms")
	cfg.Set("workers.max_attempts", 10)
	cfg.Set("workers.reconcile_interval", "1s")
	cfg.Set("workers.heartbeat", "300ms")
	cfg.Set("workers.replica_timeout", "2s")
	cfg.Set("http.shutdown_timeout", "10s")
	cfg.Set("github.redelivery.interval", "0s")
	// Sessions here are many and short; the per-user cap has its own test.
	cfg.Set("limits.active_per_user", 0)
	cfg.Set("limits.active_per_repo", 0)
	cfg.Set("limits.active_per_installation", 0)
	cfg.Set("limits.daily_per_repo", 0)
	cfg.Set("github.outbound.creates", []map[string]any{{"limit": 100000, "window": "1m"}})
	for k, v := range o.set {
		cfg.Set(k, v)
	}
	return &fleet{t: t, gh: gh, bin: servetest.Build(t), dsn: dsn, db: db, cfg: cfg}
}

// start starts a replica and points the stand-in's webhooks at every
// replica started so far (a load balancer in front of them).
func (f *fleet) start() *servetest.Replica {
	f.t.Helper()
	r := servetest.Start(f.t, f.bin, f.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.WaitReady(ctx); err != nil {
		f.t.Fatalf("%s not ready: %v\n%s", r.Name(), err, r.Logs())
	}
	f.mu.Lock()
	f.replicas = append(f.replicas, r)
	f.mu.Unlock()
	f.retarget()
	return r
}

// retarget points the webhooks at the replicas still running.
func (f *fleet) retarget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var urls []string
	for _, r := range f.replicas {
		select {
		case <-r.Exited():
		default:
			urls = append(urls, r.WebhookURL())
		}
	}
	if len(urls) == 0 {
		return // the next start points them
	}
	f.gh.SetWebhookTargets(servetest.WebhookSecret, urls...)
}

// issue opens issue n on the stand-in.
func (f *fleet) issue(n int) {
	f.gh.AddIssue(owner, repoName, fakegithub.Issue{Number: n, Title: fmt.Sprintf("Issue %d", n), Body: "TestAdd fails", State: "open", User: requester})
}

// pull opens pull request n from a branch of its own at the default
// branch's head.
func (f *fleet) pull(n int) {
	branch := fmt.Sprintf("topic-%d", n)
	sha := f.gh.CreateBranch(owner, repoName, branch, "main")
	f.gh.AddPull(owner, repoName, fakegithub.Pull{Number: n, Title: fmt.Sprintf("Topic %d", n), State: "open", User: requester,
		HeadSHA: sha, HeadRef: branch, BaseRef: "main"})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pulls == nil {
		f.pulls = map[int]bool{}
	}
	f.pulls[n] = true
}

// comment posts a comment on issue n on the stand-in, as GitHub has it
// before it sends the webhook, and returns its issue_comment payload.
func (f *fleet) comment(n int, body string) []byte {
	f.t.Helper()
	id := f.gh.AddComment(owner, repoName, n, requester, body)
	f.mu.Lock()
	onPR := f.pulls[n]
	f.mu.Unlock()
	out, err := webhookfixture.IssueComment(webhookfixture.Comment{
		Owner: owner, Repo: repoName, Number: n, PullRequest: onPR, Login: requester, UserID: requesterID,
		ID: id, Body: body, InstallationID: installationID,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// sessionRow is what the invariants look at in a session.
type sessionRow struct {
	ID, State, Outcome, Reason string
	Number, PR, Redispatches   int
}

func (f *fleet) sessions() []sessionRow {
	f.t.Helper()
	rows, err := f.db.Query(`SELECT id, state, outcome, reason, number, pr_number, redispatches FROM sessions ORDER BY id`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []sessionRow
	for rows.Next() {
		var s sessionRow
		if err := rows.Scan(&s.ID, &s.State, &s.Outcome, &s.Reason, &s.Number, &s.PR, &s.Redispatches); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// waitDone waits until n sessions exist and all are done, and until no
// work is pending (their syncs to GitHub have run too). It polls the
// database: the condition is the replicas', not the test's.
func (f *fleet) waitDone(n int, within time.Duration) []sessionRow {
	f.t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		all := f.sessions()
		done := 0
		for _, s := range all {
			if s.State == "done" {
				done++
			}
		}
		var pending int
		if err := f.db.QueryRow(`SELECT COUNT(*) FROM work WHERE state = 'pending'`).Scan(&pending); err != nil {
			f.t.Fatal(err)
		}
		if len(all) >= n && done == len(all) && pending == 0 {
			return all
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("after %s: %d sessions (want %d), %d done, %d work items pending\n%s", within, len(all), n, done, pending, f.logTails())
		}
		<-tick.C
	}
}

// logTails is the end of every replica's log, for failure messages.
func (f *fleet) logTails() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, r := range f.replicas {
		lines := r.LogLines()
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", r.Name(), strings.Join(lines, "\n"))
	}
	return b.String()
}

// created counts the stand-in's successful POSTs to exactly path.
func (f *fleet) created(path string) int {
	n := 0
	for _, r := range f.gh.RequestsMatching("POST", path) {
		if r.Path == path && r.Status == 201 {
			n++
		}
	}
	return n
}

func repoPath(rest string) string { return "/repos/" + owner + "/" + repoName + rest }
