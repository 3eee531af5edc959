// Package gather is everything the agent is told about the thread, from
// GitHub and the store, each item marked trusted or not; it decides nothing
// and writes nothing.
//
// What it gathers beyond the title and body: the default branch's
// AGENTS.md, comments by the repo's writers, a review comment's place, a
// repair's failing checks, and for a follow-up on a pull request Inspect
// opened, its earlier sessions. Every gathered text is stripped of hidden
// characters and bounded. The spec itself is assembled by the app
// (app/spec.go).
package gather

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/app/buildkitelog"
	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
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

// MaxRepairChecks bounds the failing checks one repair names and gathers
// output for: a matrix build can fail hundreds of jobs for one cause, and
// the spec has room for only so much.
const MaxRepairChecks = 15

// Store is what gathering reads from the store: a pull request's earlier
// sessions and their attempts' results.
type Store interface {
	SessionsForPull(ctx context.Context, repoID int64, number int, limit int) ([]store.Session, error)
	SessionsForTarget(ctx context.Context, repoID int64, number int, limit int) ([]store.Session, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	// SessionTurns are a session's turns after its request (decision
	// 0071), for the history of a conversation.
	SessionTurns(ctx context.Context, sessionID string) ([]session.Turn, error)
}

// FailingCheck is one failing check on a commit that the repo repairs.
type FailingCheck struct {
	Name string
	// RunID and AppSlug are a check run's (0 and "" for a status).
	RunID   int64
	AppSlug string
	// Title, Summary and Text are a check run's output; Description and
	// TargetURL a status's.
	Title, Summary, Text   string
	Description, TargetURL string
	// DetailsURL is a check run's link to the CI's own page.
	DetailsURL string
}

// Gatherer gathers one session's context. Its GitHub reads go through the
// client each call is given (the installation's).
type Gatherer struct {
	Store Store
	// Bot is our bot's login: a pull request it opened on one of
	// Inspect's branches is Inspect's (OpenedByInspect).
	Bot string
	// RoleName reads a user's role on a repository ("none" for a user
	// without access).
	RoleName func(ctx context.Context, c *github.Client, owner, repo, login string) (string, error)
	// FailingChecks lists the failing checks on sha that the repo's
	// config repairs, our own check run never among them.
	FailingChecks func(ctx context.Context, c *github.Client, owner, repo, sha string, cfg config.Repo) ([]FailingCheck, error)
	// Buildkite reads the log of a Buildkite job a failing check links to
	// (its status's target or its run's details URL), when the server is
	// configured for a Buildkite organization; nil reads none.
	Buildkite *buildkitelog.Reader
}

// Context adds what the session's way in brings beyond the title and
// body: comments by the repo's writers, a review comment's place, a
// repair's failing checks, and for a follow-up on a pull request Inspect
// opened, its earlier sessions. Everything is marked untrusted, stripped
// of hidden characters, and bounded.
//
// comments is the thread's comment count as GitHub gave it (-1: unknown):
// when the only comments are the request and our progress comment, there
// is nothing to list, and the request is saved.
func (g Gatherer) Context(ctx context.Context, c *github.Client, sess store.Session, cfg config.Repo, pinned string, pr *github.PullRequest, comments int) ([]contract.ContextItem, error) {
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
		if items, err = g.writerComments(ctx, c, sess); err != nil {
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
		checks, err := g.checkContext(ctx, c, sess, cfg, pinned)
		if err != nil {
			return nil, err
		}
		items = append(items, checks...)
	}
	if (pr != nil && OpenedByInspect(pr, g.Bot)) || ti.Continues != "" {
		history, err := g.earlierSessions(ctx, sess)
		if err != nil {
			return nil, err
		}
		items = append(items, history...)
	}
	if ti.Continues != "" {
		// A continuation (decision 0072): what others pushed since.
		prev, err := g.Store.GetSession(ctx, ti.Continues)
		if err != nil {
			return nil, err
		}
		since, err := g.commitsSince(ctx, c, sess, prev, pinned)
		if err != nil {
			return nil, err
		}
		items = append(items, since...)
	}
	return items, nil
}

// OpenedByInspect says whether Inspect opened the pull request: bot (our
// bot's login) is the author and the branch is one of Inspect's.
func OpenedByInspect(pr *github.PullRequest, bot string) bool {
	return strings.EqualFold(pr.GetUser().GetLogin(), bot) && strings.HasPrefix(pr.GetHead().GetRef(), "inspect/")
}

// DefaultBranchAgentsMD is the default branch's AGENTS.md as a context item
// (none when there is no such file). It is the repository's own guidance,
// merged by its writers, so it is not marked untrusted.
func DefaultBranchAgentsMD(ctx context.Context, c *github.Client, owner, repo, branch string) ([]contract.ContextItem, error) {
	f, _, _, err := c.Repositories.GetContents(ctx, owner, repo, "AGENTS.md", &github.RepositoryContentGetOptions{Ref: branch})
	if ghwrite.IsStatus(err, http.StatusNotFound) || (err == nil && f == nil) {
		return nil, nil // no file (or a directory of that name)
	}
	if ghwrite.RefusalSays(err, http.StatusForbidden, "too large") {
		// Over 1 MB GitHub serves no file in this media type. Far more
		// than one context item holds anyway: left out, not an error that
		// would end the session.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading AGENTS.md from %s: %w", branch, err)
	}
	text, err := f.GetContent()
	if err != nil {
		return nil, fmt.Errorf("decoding AGENTS.md: %w", err)
	}
	return []contract.ContextItem{{Kind: contract.ContextAgentsMD, Source: "AGENTS.md@" + branch, Text: clip(text)}}, nil
}

// clip makes untrusted text fit one context item.
func clip(s string) string {
	s = policy.CleanText(strings.ToValidUTF8(s, ""))
	if len(s) <= contextTextBytes {
		return s
	}
	return policy.TruncateUTF8(s, contextTextBytes) + "\n…(cut)"
}
