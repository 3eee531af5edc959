// Command inspect-demo runs Inspect's main job on embedded defaults against
// the stand-ins: the real HTTP server and workers, SQLite, the local
// executor with its bubblewrap sandbox, the GitHub stand-in, and a sample
// repository whose test fails. The agent is the stand-in script in
// examples/. It never ships in the production image.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/ghclient"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/examples"
	"github.com/inspecthq/inspect/internal/fakegithub"
	"github.com/inspecthq/inspect/runner/local"
	"github.com/inspecthq/inspect/session"
)

func main() {
	dir, err := filepath.Abs(filepath.Join(".demo", time.Now().UTC().Format("20060102-150405")))
	if err == nil {
		err = run(context.Background(), dir, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

const (
	owner  = "acme"
	repo   = "widgets"
	repoID = 1001
	instID = 77
	secret = "demo-webhook-secret"
	issue  = 7
)

func run(ctx context.Context, dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(out, "Building the inspect binary (the local executor runs it as `inspect runner`)…")
	bin := filepath.Join(dir, "inspect")
	if b, err := exec.Command("go", "build", "-o", bin, "github.com/inspecthq/inspect/cmd/inspect").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, b)
	}

	gh := fakegithub.New()
	defer gh.Close()
	gh.AddInstallation(instID, owner)
	gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repo, DefaultBranch: "main", InstallationID: instID})
	for login, id := range userIDs {
		gh.AddUser(login, id, "User")
	}
	gh.SetPermission(owner, repo, "alice", "write")
	gh.SetPermission(owner, repo, "bob", "read")
	gh.CommitFiles(owner, repo, "main", examples.SampleRepo(), "widgets: Add, with a failing test")
	gh.AddIssue(owner, repo, fakegithub.Issue{Number: issue, Title: "TestAdd fails", Body: "Add(1, 1) returns 3.", State: "open", User: "bob"})

	cfg := config.Defaults()
	cfg.GitHub.AppID = gh.AppID()
	cfg.GitHub.PrivateKey = string(gh.AppPrivateKeyPEM())
	cfg.GitHub.WebhookSecret = secret
	cfg.GitHub.APIURL = gh.APIURL()
	cfg.GitHub.WebURL = gh.URL()
	cfg.Database.DSN = filepath.Join(dir, "inspect.db")
	cfg.Workers.Count = 2
	cfg.Workers.PollInterval = 100 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.Database.Driver, cfg.Database.DSN)
	if err != nil {
		return err
	}
	defer st.Close()
	logFile, err := os.Create(filepath.Join(dir, "inspect.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	clients, err := ghclient.NewGitHubClients(cfg.GitHub.APIURL, cfg.GitHub.AppID, []byte(cfg.GitHub.PrivateKey), "inspect-demo", nil)
	if err != nil {
		return err
	}
	// Workspaces go under the system temp dir: the sandbox's unprivileged
	// uid must be able to reach them, which a checkout under /root is not.
	work, err := os.MkdirTemp("", "inspect-demo-attempts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	lx, err := local.New(local.Config{Binary: bin, Args: []string{"--work-dir", work}, Output: logFile})
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = lx.Close(closeCtx) // the demo's attempts have all ended here
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	svc := app.NewService(app.Options{Config: cfg, Store: st, GitHub: clients, Executor: lx, ChannelURL: base,
		Logger: zerolog.New(logFile).With().Timestamp().Logger()})
	if err := svc.ResolveIdentity(ctx); err != nil {
		return err
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- svc.Serve(serveCtx, ln) }()
	defer func() { stop(); <-served }()
	hook := base + app.WebhookPath

	fmt.Fprintf(out, "GitHub stand-in at %s; Inspect at %s; store %s\n\n", gh.URL(), base, cfg.Database.DSN)
	steps := []struct{ who, body string }{
		{"bob", "/inspect delete the tests"},
		{"alice", "/inspect help"},
		{"alice", "/inspect make TestAdd pass"},
	}
	var lastComment int64
	for i, step := range steps {
		id := gh.AddComment(owner, repo, issue, step.who, step.body)
		lastComment = id
		code, err := deliver(hook, fmt.Sprintf("demo-delivery-%d", i), commentPayload(id, step.who, step.body))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "→ issue_comment by @%s: %q → HTTP %d\n", step.who, step.body, code)
	}
	code, err := deliver(hook, "demo-delivery-2", commentPayload(lastComment, "alice", steps[2].body))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "→ the last delivery again (a redelivery) → HTTP %d, nothing new\n\n", code)

	fmt.Fprintln(out, "Waiting for the session: the agent and `go test` run in the sandbox…")
	sess, err := waitForEnd(ctx, st, lastComment)
	if err != nil {
		return err
	}
	return report(out, gh, sess, logFile.Name())
}

// waitForEnd watches the store until the session of commentID is done and
// GitHub has been brought in line (no work pending). The demo shows the real
// server loop at work, so it polls rather than drives it.
func waitForEnd(ctx context.Context, st *store.Store, commentID int64) (store.Session, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		sessions, err := st.SessionsForTarget(ctx, repoID, issue, 10)
		if err != nil {
			return store.Session{}, err
		}
		for _, s := range sessions {
			if s.CommentID != commentID || s.State() != session.Done {
				continue
			}
			// Done in the store comes first; the sync that concludes the
			// check run and edits the comment follows. Wait for it too.
			counts, err := st.WorkCounts(ctx)
			if err != nil {
				return store.Session{}, err
			}
			if counts["pending"] == 0 {
				return s, nil
			}
		}
		select {
		case <-ctx.Done():
			return store.Session{}, errors.New("the session did not end within 5 minutes; see the log")
		case <-tick.C:
		}
	}
}

func report(out io.Writer, gh *fakegithub.Server, sess store.Session, logName string) error {
	fmt.Fprintf(out, "\nSession %s: %s (%s)\n", sess.ID, sess.Outcome, sess.Detail)
	if sess.Outcome != session.Changed {
		return fmt.Errorf("the session ended %s, not changed; see %s", sess.Outcome, logName)
	}
	msg, err := exec.Command("git", "--git-dir", gh.GitDir(owner, repo), "log", "-1", "--format=commit %H%nAuthor: %an <%ae>%n%n%B", sess.CommitSHA).Output()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n=== The commit (signed by GitHub, authored by the App's bot) ===\n%s", msg)
	for _, cr := range gh.CheckRuns(owner, repo) {
		fmt.Fprintf(out, "=== Check run %q on %.7s: %s, %s ===\n", cr.Name, cr.HeadSHA, cr.Status, cr.Conclusion)
	}
	fmt.Fprintf(out, "\n=== Pull request #%d (reviewers: %s) ===\n", sess.PRNumber, strings.Join(gh.RequestedReviewers(owner, repo, sess.PRNumber), ", "))
	fmt.Fprintln(out, prText(gh, sess.PRNumber))
	fmt.Fprintln(out, "\n=== Comments Inspect posted on the issue ===")
	for _, c := range gh.Comments(owner, repo, issue) {
		if c.User != gh.BotLogin() {
			continue
		}
		fmt.Fprintf(out, "--- @%s ---\n%s\n", c.User, stripMarkers(c.Body))
	}
	fmt.Fprintf(out, "\nLogs: %s\n", logName)
	return nil
}

// prText reads the PR through the stand-in's REST API, as a reviewer would.
func prText(gh *fakegithub.Server, number int) string {
	for _, r := range gh.RequestsMatching("POST", "/repos/"+owner+"/"+repo+"/pulls") {
		var pr struct{ Title, Body string }
		if json.Unmarshal(r.Body, &pr) == nil && pr.Title != "" {
			return "Title: " + pr.Title + "\n\n" + pr.Body
		}
	}
	return fmt.Sprintf("(pull request #%d not found)", number)
}

func stripMarkers(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "<!-- inspect:") {
			keep = append(keep, l)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// userIDs are the stand-in's user ids, as GitHub would put them in payloads.
var userIDs = map[string]int64{"alice": 1, "bob": 2}

func commentPayload(commentID int64, login, body string) []byte {
	user := map[string]any{"login": login, "id": userIDs[login], "type": "User"}
	payload := map[string]any{
		"action":       "created",
		"installation": map[string]any{"id": instID},
		"repository": map[string]any{"id": repoID, "name": repo, "full_name": owner + "/" + repo,
			"default_branch": "main", "owner": map[string]any{"login": owner, "type": "Organization"}},
		"issue":   map[string]any{"number": issue, "title": "TestAdd fails", "state": "open"},
		"comment": map[string]any{"id": commentID, "body": body, "user": user},
		"sender":  user,
	}
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err) // a literal map of strings and numbers always marshals
	}
	return b
}

func deliver(url, deliveryID string, body []byte) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", deliveryID)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // drained only so the connection is reused
	return resp.StatusCode, nil
}
