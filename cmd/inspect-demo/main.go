// Command inspect-demo runs Inspect's main job on embedded defaults against
// the stand-ins: a GitHub stand-in, the real HTTP server and workers, and a
// SQLite file. It never ships in the production image.
//
// Until the executor lands (issue 3) it shows the control plane: signed
// webhooks in, sessions accepted and prepared, the replies printed.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakegithub"
)

func main() {
	dir := filepath.Join(".demo", time.Now().UTC().Format("20060102-150405"))
	if err := run(context.Background(), dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

const (
	owner   = "acme"
	repo    = "widgets"
	repoID  = 1001
	instID  = 77
	secret  = "demo-webhook-secret"
	headSHA = "3f786850e387550fdab836ed7e6dc881de23001b"
)

func run(ctx context.Context, dir string, out io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gh := fakegithub.New()
	defer gh.Close()
	gh.AddInstallation(instID, owner)
	gh.AddRepo(fakegithub.Repo{ID: repoID, Owner: owner, Name: repo, DefaultBranch: "main", InstallationID: instID})
	gh.AddUser("alice", 1, "User")
	gh.AddUser("bob", 2, "User")
	gh.SetPermission(owner, repo, "alice", "write")
	gh.SetPermission(owner, repo, "bob", "read")
	gh.AddPull(owner, repo, fakegithub.Pull{Number: 7, Title: "Fix the flaky scheduler test", State: "open", User: "alice",
		HeadSHA: headSHA, HeadRef: "fix-scheduler", BaseRef: "main"})
	gh.SetFile(owner, repo, "main", ".github/inspect.yml", []byte("verify:\n  - name: unit tests\n    run: [go, test, ./...]\n"))

	cfg := config.Defaults()
	cfg.GitHub.AppID = gh.AppID()
	cfg.GitHub.PrivateKey = string(gh.AppPrivateKeyPEM())
	cfg.GitHub.WebhookSecret = secret
	cfg.GitHub.APIURL = gh.APIURL()
	cfg.GitHub.WebURL = gh.URL()
	cfg.Database.DSN = filepath.Join(dir, "inspect.db")
	cfg.Workers.Count = 0 // the demo runs the worker steps itself, in order
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
	clients, err := app.NewGitHubClients(cfg.GitHub.APIURL, cfg.GitHub.AppID, []byte(cfg.GitHub.PrivateKey), "inspect-demo")
	if err != nil {
		return err
	}
	svc := app.NewService(app.Options{Config: cfg, Store: st, GitHub: clients, Logger: zerolog.New(logFile).With().Timestamp().Logger()})
	if err := svc.ResolveIdentity(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- svc.Serve(serveCtx, ln) }()
	defer func() { stop(); <-served }()
	hook := "http://" + ln.Addr().String() + app.WebhookPath

	fmt.Fprintf(out, "Inspect demo: GitHub stand-in at %s, app at %s, store %s\n\n", gh.URL(), hook, cfg.Database.DSN)
	steps := []struct{ who, body string }{
		{"alice", "/inspect fix the flaky test"},
		{"bob", "/inspect delete the tests"},
		{"alice", "/inspect help"},
	}
	var firstComment int64
	for i, step := range steps {
		// GitHub has the comment before it sends the webhook.
		id := gh.AddComment(owner, repo, 7, step.who, step.body)
		if i == 0 {
			firstComment = id
		}
		payload := commentPayload(id, step.who, step.body)
		code, err := deliver(hook, fmt.Sprintf("demo-delivery-%d", i), payload)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "→ webhook issue_comment by @%s: %q → HTTP %d\n", step.who, step.body, code)
	}
	code, err := deliver(hook, "demo-delivery-0", commentPayload(firstComment, "alice", steps[0].body))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "→ the first delivery again (a redelivery) → HTTP %d, nothing new\n\n", code)

	if _, err := svc.RunPending(ctx); err != nil {
		return err
	}
	sessions, err := st.SessionsForTarget(ctx, repoID, 7, 10)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "Sessions:")
	for _, s := range sessions {
		line := fmt.Sprintf("  %s  @%s  %s", s.ID, s.RequesterLogin, s.State)
		if s.State == store.Done {
			line += fmt.Sprintf(" outcome=%s reason=%s", s.Outcome, s.Reason)
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintln(out, "\nCheck runs on the PR head:")
	for _, cr := range gh.CheckRuns(owner, repo) {
		fmt.Fprintf(out, "  %s on %s: %s (external id %s)\n", cr.Name, cr.HeadSHA[:7], cr.Status, cr.ExternalID)
	}
	fmt.Fprintln(out, "\nReactions on alice's comment:")
	for _, r := range gh.CommentReactions(owner, repo, firstComment) {
		fmt.Fprintf(out, "  :%s: by %s\n", r.Content, r.User)
	}
	fmt.Fprintln(out, "\nComments Inspect posted on the PR:")
	for _, c := range gh.Comments(owner, repo, 7) {
		if c.User != gh.AppSlug()+"[bot]" {
			continue
		}
		fmt.Fprintf(out, "--- @%s ---\n%s\n", c.User, stripMarkers(c.Body))
	}
	fmt.Fprintf(out, "\nLogs: %s\n", logFile.Name())
	return nil
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

func commentPayload(commentID int64, login, body string) []byte {
	user := map[string]any{"login": login, "id": len(login), "type": "User"}
	payload := map[string]any{
		"action":       "created",
		"installation": map[string]any{"id": instID},
		"repository": map[string]any{"id": repoID, "name": repo, "full_name": owner + "/" + repo,
			"default_branch": "main", "owner": map[string]any{"login": owner, "type": "Organization"}},
		"issue": map[string]any{"number": 7, "title": "Fix the flaky scheduler test", "state": "open",
			"pull_request": map[string]any{"url": "https://api.github.com/repos/acme/widgets/pulls/7"}},
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
