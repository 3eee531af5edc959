package gather

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/ghwrite"
	"github.com/inspecthq/inspect/app/render"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// checkContext is a repair's failing checks as the agent sees them: each
// one's output, its annotations and, for a GitHub Actions job or a job of
// the configured Buildkite organization, the tail of its log. All of it is
// untrusted: the pull request's code prints it.
func (g Gatherer) checkContext(ctx context.Context, c *github.Client, sess store.Session, cfg config.Repo, sha string) ([]contract.ContextItem, error) {
	checks, err := g.FailingChecks(ctx, c, sess.RepoOwner, sess.RepoName, sha, cfg)
	if err != nil {
		return nil, err
	}
	var items []contract.ContextItem
	if len(checks) > MaxRepairChecks {
		checks = checks[:MaxRepairChecks] // the instructions name how many more
	}
	for _, ch := range checks {
		var anns []*github.CheckRunAnnotation
		var tail string
		if ch.RunID != 0 {
			anns, _, err = c.Checks.ListCheckRunAnnotations(ctx, sess.RepoOwner, sess.RepoName, ch.RunID, &github.ListOptions{PerPage: maxAnnotationsPerRun})
			if err != nil {
				return nil, fmt.Errorf("listing annotations of %q: %w", ch.Name, err)
			}
			if ch.AppSlug == "github-actions" {
				tail = jobLogTail(ctx, c, sess, ch.RunID)
			}
		}
		if tail == "" && g.Buildkite != nil {
			tail = g.buildkiteLogTail(ctx, ch)
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextCheckOutput, Source: render.CleanLine(ch.Name), Text: clip(checkText(ch, anns, tail)), Untrusted: true})
	}
	return items, nil
}

// buildkiteLogTail is the end of the log of the Buildkite job a check
// links to: a status's target URL, a check run's details URL. Only a job
// of the configured organization is read (app/buildkitelog); best effort,
// like an Actions job's log.
func (g Gatherer) buildkiteLogTail(ctx context.Context, ch FailingCheck) string {
	link := ch.TargetURL
	if ch.RunID != 0 {
		link = ch.DetailsURL
	}
	tail, err := g.Buildkite.Tail(ctx, link, logTailBytes)
	if err != nil {
		zerolog.Ctx(ctx).Info().Str("error", err.Error()).Str("check", render.CleanLine(ch.Name)).Msg("no Buildkite job log")
		return ""
	}
	return tail
}

// checkText is what the agent reads of one failing check: a status's
// description and link, or a check run's output and its annotations, and
// the end of its job's log (logTail, "" for none).
func checkText(ch FailingCheck, anns []*github.CheckRunAnnotation, logTail string) string {
	var b strings.Builder
	if ch.RunID == 0 {
		fmt.Fprintf(&b, "Commit status %q failed: %s\n", ch.Name, ch.Description)
		if ch.TargetURL != "" {
			fmt.Fprintf(&b, "Details: %s\n", ch.TargetURL)
		}
		if logTail != "" {
			fmt.Fprintf(&b, "\nEnd of the job's log:\n%s\n", logTail)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "Check run %q (from %s) failed.\n\n%s\n\n%s\n", ch.Name, ch.AppSlug, ch.Title, ch.Summary)
	if ch.Text != "" {
		fmt.Fprintf(&b, "\n%s\n", ch.Text)
	}
	if len(anns) > 0 {
		b.WriteString("\nAnnotations:\n")
	}
	for _, a := range anns {
		fmt.Fprintf(&b, "- %s:%d: %s: %s %s\n", a.GetPath(), a.GetStartLine(), a.GetAnnotationLevel(), a.GetTitle(), a.GetMessage())
	}
	if logTail != "" {
		fmt.Fprintf(&b, "\nEnd of the job's log:\n%s\n", logTail)
	}
	return b.String()
}

// jobLogTail reads the end of a GitHub Actions job's log (an Actions check
// run's id is its job's). The log lives behind a short-lived redirect to
// storage that is not GitHub's API, so it is fetched without our token.
// Best effort: a log that cannot be read leaves it out.
func jobLogTail(ctx context.Context, c *github.Client, sess store.Session, jobID int64) string {
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
	return logTail(io.LimitReader(resp.Body, maxLogBytes), logTailBytes)
}

// logTail is the last max bytes of a log, from its first whole line when
// the start was cut, as valid UTF-8 ("" when reading fails).
func logTail(r io.Reader, max int) string {
	tail := &tailWriter{max: max}
	if _, err := io.Copy(tail, r); err != nil {
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

// maxListedChecks bounds the check runs read for one commit.
const maxListedChecks = 300

// ListFailingChecks lists the latest check runs and commit statuses on sha
// that count as failures (policy.CountsAsFailure: never our own, self)
// and that the repo's config repairs.
func ListFailingChecks(ctx context.Context, c *github.Client, owner, name, sha string, cfg config.Repo, self policy.AppIdentity) ([]FailingCheck, error) {
	var out []FailingCheck
	opts := &github.ListCheckRunsOptions{Status: github.String("completed"), Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for seen := 0; seen < maxListedChecks; {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opts)
		if err != nil {
			return nil, fmt.Errorf("listing check runs: %w", err)
		}
		for _, cr := range res.CheckRuns {
			seen++
			app := cr.GetApp()
			if counts, _ := policy.CountsAsFailure(policy.CheckFacts{Source: policy.SourceCheckRun, Result: cr.GetConclusion(),
				AppID: app.GetID(), AppSlug: app.GetSlug()}, self); !counts || !cfg.RepairsCheck(cr.GetName()) {
				continue
			}
			out = append(out, FailingCheck{Name: cr.GetName(), RunID: cr.GetID(), AppSlug: app.GetSlug(), DetailsURL: cr.GetDetailsURL(),
				Title: cr.GetOutput().GetTitle(), Summary: cr.GetOutput().GetSummary(), Text: cr.GetOutput().GetText()})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	combined, _, err := c.Repositories.GetCombinedStatus(ctx, owner, name, sha, &github.ListOptions{PerPage: 100})
	if ghwrite.IsStatus(err, http.StatusForbidden) {
		// An installation that has not accepted the statuses permission
		// yet: its check runs still count.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("commit statuses not readable; grant the App statuses: read")
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading commit statuses: %w", err)
	}
	for _, st := range combined.Statuses {
		// The combined status names no creator, so a status is ours here
		// only if GitHub one day names one; Inspect posts none.
		counts, _ := policy.CountsAsFailure(policy.CheckFacts{Source: policy.SourceCommitStatus, Result: st.GetState(),
			CreatorLogin: st.GetCreator().GetLogin(), CreatorType: st.GetCreator().GetType()}, self)
		if counts && cfg.RepairsCheck(st.GetContext()) {
			out = append(out, FailingCheck{Name: st.GetContext(), Description: st.GetDescription(), TargetURL: st.GetTargetURL()})
		}
	}
	return out, nil
}
