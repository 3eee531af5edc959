package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/runner/contract"
)

// Bounds on what one session's context gathers, so a busy thread or a
// chatty CI job cannot make a spec huge (the contract caps it anyway).
const (
	maxContextComments   = 30
	maxCommentPages      = 10
	maxRoleLookups       = 20
	maxAnnotationsPerRun = 50
	maxEarlierSessions   = 10
	// logTailBytes is how much of a job log's end the agent sees;
	// maxLogBytes how much of the log is read to find it.
	logTailBytes = 16 << 10
	maxLogBytes  = 32 << 20
	// contextTextBytes caps one gathered text below the contract's limit.
	contextTextBytes = 32 << 10
)

// gatherContext adds what the session's way in brings beyond the title and
// body: comments by the repo's writers, a review comment's place, a
// repair's failing checks, and for a follow-up on a pull request Inspect
// opened, its earlier sessions. Everything is marked untrusted, stripped
// of hidden characters, and bounded.
//
// comments is the thread's comment count as GitHub gave it (-1: unknown):
// when the only comments are the request and our progress comment, there
// is nothing to list, and the request is saved.
func (s *Service) gatherContext(ctx context.Context, c *github.Client, sess store.Session, cfg config.Repo, pinned string, pr *github.PullRequest, comments int) ([]contract.ContextItem, error) {
	ours := 0
	if sess.CommentID != 0 {
		ours++
	}
	if sess.ProgressCommentID != 0 && sess.Info().Review == nil { // a review thread's reply is no issue comment
		ours++
	}
	var items []contract.ContextItem
	if comments < 0 || comments > ours {
		var err error
		if items, err = s.writerComments(ctx, c, sess); err != nil {
			return nil, err
		}
	}
	ti := sess.Info()
	if r := ti.Review; r != nil {
		items = append(items, contract.ContextItem{Kind: contract.ContextReviewComment,
			Source: fmt.Sprintf("%s, %s", render.CleanLine(r.Path), render.LineRange(r.StartLine, r.Line)), Text: clip(r.DiffHunk), Untrusted: true})
	}
	if len(ti.Checks) > 0 {
		// A repair, or a person's retry of one.
		checks, err := s.checkContext(ctx, c, sess, cfg, pinned)
		if err != nil {
			return nil, err
		}
		items = append(items, checks...)
	}
	if pr != nil && s.openedByInspect(pr) {
		history, err := s.earlierSessions(ctx, sess)
		if err != nil {
			return nil, err
		}
		items = append(items, history...)
	}
	return items, nil
}

// openedByInspect says whether Inspect opened the pull request: its bot
// is the author and the branch is one of Inspect's.
func (s *Service) openedByInspect(pr *github.PullRequest) bool {
	return strings.EqualFold(pr.GetUser().GetLogin(), s.botLogin()) && strings.HasPrefix(pr.GetHead().GetRef(), "inspect/")
}

// writerComments are the thread's latest comments by users with write
// access, oldest first. Others are left out: the agent acts with the
// requester's authority, and a drive-by commenter has none to lend.
func (s *Service) writerComments(ctx context.Context, c *github.Client, sess store.Session) ([]contract.ContextItem, error) {
	var comments []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for pages := 0; pages < maxCommentPages; pages++ {
		page, resp, err := c.Issues.ListComments(ctx, sess.RepoOwner, sess.RepoName, sess.Number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing comments: %w", err)
		}
		comments = append(comments, page...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	roles := map[string]policy.Role{}
	var items []contract.ContextItem
	// Newest first, so a long thread keeps its latest discussion.
	for i := len(comments) - 1; i >= 0 && len(items) < maxContextComments; i-- {
		cm := comments[i]
		login := cm.GetUser().GetLogin()
		if cm.GetID() == sess.CommentID || strings.TrimSpace(cm.GetBody()) == "" || policy.IsBotSender(login, cm.GetUser().GetType()) {
			continue // the request itself, or bots (our own progress comments too)
		}
		role, known := roles[strings.ToLower(login)]
		if !known {
			if len(roles) == maxRoleLookups {
				continue
			}
			r, err := roleName(ctx, c, sess.RepoOwner, sess.RepoName, login)
			if err != nil {
				return nil, err
			}
			role = policy.Role(r)
			roles[strings.ToLower(login)] = role
		}
		if !policy.CanWrite(role) {
			continue
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextComment, Author: login, Source: cm.GetHTMLURL(),
			Text: clip(cm.GetBody()), Untrusted: true})
	}
	slices.Reverse(items)
	return items, nil
}

// checkContext is a repair's failing checks as the agent sees them: each
// one's output, its annotations and, for a GitHub Actions job, the tail
// of its log. All of it is untrusted: the pull request's code prints it.
func (s *Service) checkContext(ctx context.Context, c *github.Client, sess store.Session, cfg config.Repo, sha string) ([]contract.ContextItem, error) {
	checks, err := s.failingChecks(ctx, c, sess.RepoOwner, sess.RepoName, sha, cfg)
	if err != nil {
		return nil, err
	}
	var items []contract.ContextItem
	if len(checks) > maxRepairChecks {
		checks = checks[:maxRepairChecks] // the instructions name how many more
	}
	for _, ch := range checks {
		var b strings.Builder
		if ch.RunID == 0 {
			fmt.Fprintf(&b, "Commit status %q failed: %s\n", ch.Name, ch.Description)
			if ch.TargetURL != "" {
				fmt.Fprintf(&b, "Details: %s\n", ch.TargetURL)
			}
		} else {
			fmt.Fprintf(&b, "Check run %q (from %s) failed.\n\n%s\n\n%s\n", ch.Name, ch.AppSlug, ch.Title, ch.Summary)
			if ch.Text != "" {
				fmt.Fprintf(&b, "\n%s\n", ch.Text)
			}
			anns, _, err := c.Checks.ListCheckRunAnnotations(ctx, sess.RepoOwner, sess.RepoName, ch.RunID, &github.ListOptions{PerPage: maxAnnotationsPerRun})
			if err != nil {
				return nil, fmt.Errorf("listing annotations of %q: %w", ch.Name, err)
			}
			if len(anns) > 0 {
				b.WriteString("\nAnnotations:\n")
			}
			for _, a := range anns {
				fmt.Fprintf(&b, "- %s:%d: %s: %s %s\n", a.GetPath(), a.GetStartLine(), a.GetAnnotationLevel(), a.GetTitle(), a.GetMessage())
			}
			if ch.AppSlug == "github-actions" {
				if tail := s.jobLogTail(ctx, c, sess, ch.RunID); tail != "" {
					fmt.Fprintf(&b, "\nEnd of the job's log:\n%s\n", tail)
				}
			}
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextCheckOutput, Source: render.CleanLine(ch.Name), Text: clip(b.String()), Untrusted: true})
	}
	return items, nil
}

// jobLogTail reads the end of a GitHub Actions job's log (an Actions check
// run's id is its job's). The log lives behind a short-lived redirect to
// storage that is not GitHub's API, so it is fetched without our token.
// Best effort: a log that cannot be read leaves it out.
func (s *Service) jobLogTail(ctx context.Context, c *github.Client, sess store.Session, jobID int64) string {
	log := zerolog.Ctx(ctx)
	u, _, err := c.Actions.GetWorkflowJobLogs(ctx, sess.RepoOwner, sess.RepoName, jobID, 1)
	if err != nil {
		log.Info().Err(err).Int64("job_id", jobID).Msg("no job log")
		return ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return ""
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		// Not err itself: a *url.Error quotes the URL, whose query is a
		// short-lived signature for the log.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		log.Info().Err(err).Int64("job_id", jobID).Msg("reading the job log failed")
		return ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ""
	}
	tail := &tailWriter{max: logTailBytes}
	if _, err := io.Copy(tail, io.LimitReader(resp.Body, maxLogBytes)); err != nil {
		return ""
	}
	text := string(tail.buf)
	if tail.dropped {
		// Start at a line: the cut may have split one.
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[i+1:]
		}
	}
	return strings.ToValidUTF8(text, "")
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf     []byte
	max     int
	dropped bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = bytes.Clone(t.buf[over:])
		t.dropped = true
	}
	return len(p), nil
}

// earlierSessions are a follow-up's history: each earlier session on the
// pull request (or the one that opened it), its request and what the
// agent answered.
func (s *Service) earlierSessions(ctx context.Context, sess store.Session) ([]contract.ContextItem, error) {
	all, err := s.store.SessionsForPull(ctx, sess.RepoID, sess.Number, 100)
	if err != nil {
		return nil, err
	}
	var earlier []store.Session
	for _, e := range all {
		if e.ID != sess.ID && e.State == store.Done && e.Outcome != store.Refused && e.Instructions != "" {
			earlier = append(earlier, e)
		}
	}
	if len(earlier) > maxEarlierSessions {
		earlier = earlier[len(earlier)-maxEarlierSessions:]
	}
	var items []contract.ContextItem
	for _, e := range earlier {
		var b strings.Builder
		fmt.Fprintf(&b, "Session %s, requested by @%s (%s):\n\n%s\n", e.ID, e.RequesterLogin, e.Outcome, e.Instructions)
		if answer := s.finalAnswer(ctx, e); answer != "" {
			fmt.Fprintf(&b, "\nThe agent's final answer:\n\n%s\n", answer)
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextEarlierSession, Author: e.RequesterLogin, Text: clip(b.String()), Untrusted: true})
	}
	return items, nil
}

// finalAnswer is what a session's agent answered, from its attempt's
// stored result ("" when there is none).
func (s *Service) finalAnswer(ctx context.Context, sess store.Session) string {
	if sess.AttemptID == "" {
		return ""
	}
	a, err := s.store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.Result == "" {
		return ""
	}
	var up contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		return ""
	}
	return strings.TrimSpace(up.Evidence.FinalAnswer)
}

// clip makes untrusted text fit one context item.
func clip(s string) string {
	s = policy.CleanText(strings.ToValidUTF8(s, ""))
	if len(s) <= contextTextBytes {
		return s
	}
	return policy.TruncateUTF8(s, contextTextBytes) + "\n…(cut)"
}
