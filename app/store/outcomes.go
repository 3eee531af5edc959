package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/session"
)

// The outcomes of the PRs Inspect opened (issue 38): each PR's fate in
// pr_fates, and the rollup by every dimension kept in the transaction
// that changes a fate or ends a session (decision 0075). The fate's rules
// are app/outcomes'; this file only keeps them.

const fateColumns = `repo_id, number, repo, installation_id, session_id, week, trigger_kind, preset, model, requester,
	opened_at, state, withdrawn, closed_by, closed_at, merged_at, merge_sha, first_review_at, review_rounds,
	review_comments, thread_comments, later_turns, reverted_at, reverted_by,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, total_tokens`

func scanFate(row rowScanner) (outcomes.Fate, error) {
	var (
		f                                               outcomes.Fate
		state                                           string
		withdrawn                                       int
		opened, closed, merged, firstReview, revertedAt int64
	)
	err := row.Scan(&f.RepoID, &f.Number, &f.Repo, &f.InstallationID, &f.SessionID, &f.Week, &f.Trigger, &f.Preset, &f.Model,
		&f.Requester, &opened, &state, &withdrawn, &f.ClosedBy, &closed, &merged, &f.MergeSHA, &firstReview, &f.ReviewRounds,
		&f.ReviewComments, &f.ThreadComments, &f.LaterTurns, &revertedAt, &f.RevertedBy,
		&f.Tokens.Input, &f.Tokens.Output, &f.Tokens.CacheRead, &f.Tokens.CacheWrite, &f.Tokens.Total)
	f.State, f.Withdrawn = outcomes.State(state), withdrawn != 0
	f.OpenedAt, f.ClosedAt, f.MergedAt, f.FirstReviewAt, f.RevertedAt = fromMS(opened), fromMS(closed), fromMS(merged), fromMS(firstReview), fromMS(revertedAt)
	return f, err
}

func fateArgs(f outcomes.Fate) []any {
	return []any{f.RepoID, f.Number, f.Repo, f.InstallationID, f.SessionID, f.Week, f.Trigger, f.Preset, f.Model,
		f.Requester, ms(f.OpenedAt), string(f.State), b2i(f.Withdrawn), f.ClosedBy, ms(f.ClosedAt), ms(f.MergedAt), f.MergeSHA,
		ms(f.FirstReviewAt), f.ReviewRounds, f.ReviewComments, f.ThreadComments, f.LaterTurns, ms(f.RevertedAt), f.RevertedBy,
		f.Tokens.Input, f.Tokens.Output, f.Tokens.CacheRead, f.Tokens.CacheWrite, f.Tokens.Total}
}

// OpensPR reports whether the session's report opened a PR of its own
// (not a push onto the PR it ran on).
func (s Session) OpensPR() bool {
	return s.PRNumber != 0 && !(s.Target().IsPullRequest() && s.PRNumber == s.Number)
}

// sessionDims are the dimensions a session and its PR are counted under:
// the preset and model are its current attempt's spec's.
func (s *Store) sessionDims(ctx context.Context, tx *sql.Tx, sess Session) (outcomes.Dims, error) {
	d := outcomes.Dims{RepoID: sess.RepoID, Repo: sess.FullName(), Week: outcomes.Week(sess.CreatedAt),
		Trigger: sess.TriggerKind.StoredName(), Requester: sess.RequesterLogin}
	if sess.AttemptID == "" {
		return d, nil
	}
	var spec string
	err := tx.QueryRowContext(ctx, `SELECT spec FROM attempts WHERE id = $1`, sess.AttemptID).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) || spec == "" {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	var agent struct {
		Agent struct {
			Preset string `json:"preset"`
			Model  string `json:"model"`
		} `json:"agent"`
	}
	if json.Unmarshal([]byte(spec), &agent) == nil {
		// A spec that does not decode leaves the dimensions unknown: the
		// session still counts, under "".
		d.Preset, d.Model = agent.Agent.Preset, agent.Agent.Model
	}
	return d, nil
}

// followSession keeps the outcomes in line with a session's write, in its
// transaction: a PR its report recorded gets its fate; a session that
// ended counts in the rollup, gives its PR its tokens, and is a later
// turn on the PR it ran on when Inspect opened that one.
func (s *Store) followSession(ctx context.Context, tx *sql.Tx, before, after Session, now time.Time) error {
	opened := after.OpensPR() && before.PRNumber != after.PRNumber
	ended := after.state == session.Done && before.state != session.Done
	if !opened && !ended {
		return nil
	}
	dims, err := s.sessionDims(ctx, tx, after)
	if err != nil {
		return err
	}
	if opened {
		f := outcomes.Fate{Dims: dims, Number: after.PRNumber, InstallationID: after.InstallationID, SessionID: after.ID,
			OpenedAt: now, State: outcomes.Open}
		res, err := tx.ExecContext(ctx, `INSERT INTO pr_fates (`+fateColumns+`, checked_at, updated_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31)
			ON CONFLICT DO NOTHING`, append(fateArgs(f), ms(now), ms(now))...)
		if err != nil {
			return fmt.Errorf("opening PR fate: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 { // RowsAffected's error: both drivers report it
			if err := s.addRollup(ctx, tx, f.Dims, outcomes.Contribution(f), 1); err != nil {
				return err
			}
		}
	}
	if !ended {
		return nil
	}
	if err := s.addRollup(ctx, tx, dims, outcomes.Counts{Sessions: 1}, 1); err != nil {
		return err
	}
	if after.OpensPR() {
		var u Usage
		if err := tx.QueryRowContext(ctx, `SELECT `+sumUsageColumns+` FROM attempts WHERE session_id = $1`, after.ID).Scan(u.scan()...); err != nil {
			return err
		}
		tokens := outcomes.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens,
			CacheWrite: u.CacheWriteTokens, Total: u.TotalTokens}
		if _, _, err := s.changeFate(ctx, tx, after.RepoID, after.PRNumber, "", now, func(f outcomes.Fate) (outcomes.Fate, bool) {
			if f.SessionID != after.ID {
				return f, false
			}
			f.Tokens = tokens
			return f, true
		}); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	if after.Target().IsPullRequest() {
		_, _, err := s.changeFate(ctx, tx, after.RepoID, after.Number, "turn:"+after.ID, now, func(f outcomes.Fate) (outcomes.Fate, bool) {
			if f.SessionID == after.ID {
				return f, false
			}
			return outcomes.Apply(f, outcomes.Event{Kind: outcomes.EventLaterTurn, At: now})
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}

// changeFate reads the PR's fate (row-locked on PostgreSQL), lets fn
// change it, writes it back and moves the rollup from its old
// contribution to its new one, all in tx. seen, when not "", is an item
// (a review's id, a comment's, a delivery's) counted at most once: a
// second change under it changes nothing. ErrNotFound: Inspect did not
// open that PR.
func (s *Store) changeFate(ctx context.Context, tx *sql.Tx, repoID int64, number int, seen string, now time.Time,
	fn func(outcomes.Fate) (outcomes.Fate, bool)) (before, after outcomes.Fate, err error) {
	q := `SELECT ` + fateColumns + ` FROM pr_fates WHERE repo_id = $1 AND number = $2`
	if s.dialect == postgres {
		q += ` FOR UPDATE`
	}
	before, err = scanFate(tx.QueryRowContext(ctx, q, repoID, number))
	if errors.Is(err, sql.ErrNoRows) {
		return before, before, fmt.Errorf("PR fate %d#%d: %w", repoID, number, ErrNotFound)
	}
	if err != nil {
		return before, before, err
	}
	after, changed := fn(before)
	if !changed {
		return before, before, nil
	}
	if seen != "" {
		res, err := tx.ExecContext(ctx, `INSERT INTO pr_fate_seen (repo_id, number, item, at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			repoID, number, seen, ms(now))
		if err != nil {
			return before, before, err
		}
		if n, _ := res.RowsAffected(); n == 0 { // as above
			return before, before, nil
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pr_fates SET opened_at=$3, state=$4, withdrawn=$5, closed_by=$6,
		closed_at=$7, merged_at=$8, merge_sha=$9, first_review_at=$10, review_rounds=$11, review_comments=$12,
		thread_comments=$13, later_turns=$14, reverted_at=$15, reverted_by=$16, input_tokens=$17, output_tokens=$18,
		cache_read_tokens=$19, cache_write_tokens=$20, total_tokens=$21, updated_at=$22 WHERE repo_id=$1 AND number=$2`,
		repoID, number, ms(after.OpenedAt), string(after.State), b2i(after.Withdrawn), after.ClosedBy, ms(after.ClosedAt),
		ms(after.MergedAt), after.MergeSHA, ms(after.FirstReviewAt), after.ReviewRounds, after.ReviewComments,
		after.ThreadComments, after.LaterTurns, ms(after.RevertedAt), after.RevertedBy, after.Tokens.Input,
		after.Tokens.Output, after.Tokens.CacheRead, after.Tokens.CacheWrite, after.Tokens.Total, ms(now)); err != nil {
		return before, before, fmt.Errorf("writing PR fate: %w", err)
	}
	delta := outcomes.Contribution(after)
	delta.Add(outcomes.Contribution(before), -1)
	if err := s.addRollup(ctx, tx, before.Dims, delta, 1); err != nil {
		return before, before, err
	}
	return before, after, nil
}

// rollupCountColumns are the rollup's additive counts, in the order of
// rollupValues.
var rollupCountColumns = []string{"sessions", "opened", "merged", "closed", "withdrawn", "reverted",
	"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens"}

// rollupValueColumns are the counts, then one column per bucket of each
// metric's histogram (h_<metric>_<i>, outcomes.Buckets), all additive.
func rollupValueColumns() []string {
	cols := append([]string(nil), rollupCountColumns...)
	for _, m := range outcomes.Metrics {
		for i := range outcomes.Buckets[m] {
			cols = append(cols, fmt.Sprintf("h_%s_%d", m, i))
		}
	}
	return cols
}

// rollupValueColumnsDDL declares them, for the migration.
func rollupValueColumnsDDL() string {
	var b strings.Builder
	for i, c := range rollupValueColumns() {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n\t\t\t\t" + c + " BIGINT NOT NULL DEFAULT 0")
	}
	return b.String()
}

// rollupValues is c as the value columns hold it.
func rollupValues(c outcomes.Counts) []int64 {
	t := c.MergedTokens
	v := []int64{c.Sessions, c.Opened, c.Merged, c.Closed, c.Withdrawn, c.Reverted, t.Input, t.Output, t.CacheRead, t.CacheWrite, t.Total}
	for _, m := range outcomes.Metrics {
		h := make([]int64, len(outcomes.Buckets[m]))
		for value, n := range c.Hists[m] {
			h[outcomes.BucketIndex(m, value)] += n
		}
		v = append(v, h...)
	}
	return v
}

// countsOf is rollupValues read back.
func countsOf(v []int64) outcomes.Counts {
	c := outcomes.Counts{Sessions: v[0], Opened: v[1], Merged: v[2], Closed: v[3], Withdrawn: v[4], Reverted: v[5],
		MergedTokens: outcomes.Tokens{Input: v[6], Output: v[7], CacheRead: v[8], CacheWrite: v[9], Total: v[10]}}
	i := len(rollupCountColumns)
	for _, m := range outcomes.Metrics {
		for _, value := range outcomes.Buckets[m] {
			if v[i] != 0 {
				c.AddValue(m, value, v[i])
			}
			i++
		}
	}
	return c
}

// rollupUpsert is the additive upsert of a rollup table: keys, then the
// value columns.
func rollupUpsert(table string, keys []string) string {
	cols := append(append([]string(nil), keys...), rollupValueColumns()...)
	ph := make([]string, len(cols))
	for i := range cols {
		ph[i] = fmt.Sprintf("$%d", i+1)
	}
	sets := make([]string, 0, len(cols))
	for _, c := range rollupValueColumns() {
		sets = append(sets, fmt.Sprintf("%s = %s.%s + excluded.%s", c, table, c, c))
	}
	conflict := keys[:len(keys)-1] // every key but the repository's name, which the id decides
	return `INSERT INTO ` + table + ` (` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(ph, ",") +
		`) ON CONFLICT (` + strings.Join(conflict, ", ") + `) DO UPDATE SET ` + strings.Join(sets, ", ")
}

var (
	rollupUpsertSQL   = rollupUpsert("outcome_rollup", []string{"repo_id", "week", "trigger_kind", "preset", "model", "requester", "repo"})
	rollupByUpsertSQL = rollupUpsert("outcome_rollup_by", []string{"dim", "repo_id", "value", "model", "repo"})
)

// rollupStmts are the rollup's two upserts, prepared once: a session's
// end runs one of each per dimension, and parsing their long SQL each time
// was most of a session mutation's CPU time on SQLite (under -race, a
// tenth of the app's end-to-end tests' CPU).
type rollupStmts struct {
	all, by *sql.Stmt
}

func (s *Store) prepareRollups(ctx context.Context) error {
	var err error
	if s.rollup.all, err = s.db.PrepareContext(ctx, rollupUpsertSQL); err != nil {
		return err
	}
	s.rollup.by, err = s.db.PrepareContext(ctx, rollupByUpsertSQL)
	return err
}

// dimValue is d's value of a dimension, as outcome_rollup_by keys it.
func dimValue(d outcomes.Dims, by outcomes.Dimension) string {
	switch by {
	case outcomes.ByRepo:
		return d.Repo
	case outcomes.ByTrigger:
		return d.Trigger
	case outcomes.ByPreset:
		return d.Preset
	case outcomes.ByModel:
		return d.Model
	case outcomes.ByRequester:
		return d.Requester
	}
	return d.Week
}

// addRollup adds c times sign to the rollup's rows for d: the row of
// every dimension at once, and the row of each dimension alone.
func (s *Store) addRollup(ctx context.Context, tx *sql.Tx, d outcomes.Dims, c outcomes.Counts, sign int64) error {
	if err := s.addRollupRow(ctx, tx, "", d, c, sign); err != nil {
		return err
	}
	for _, by := range outcomes.Dimensions {
		if err := s.addRollupRow(ctx, tx, by, d, c, sign); err != nil {
			return err
		}
	}
	return nil
}

// addRollupRow adds c times sign to one row: of outcome_rollup (by ""),
// or of outcome_rollup_by for the dimension by.
func (s *Store) addRollupRow(ctx context.Context, tx *sql.Tx, by outcomes.Dimension, d outcomes.Dims, c outcomes.Counts, sign int64) error {
	values := rollupValues(c)
	zero := true
	for i := range values {
		values[i] *= sign
		zero = zero && values[i] == 0
	}
	if zero {
		return nil
	}
	q, args := s.rollup.all, []any{d.RepoID, d.Week, d.Trigger, d.Preset, d.Model, d.Requester, d.Repo}
	if by != "" {
		q, args = s.rollup.by, []any{string(by), d.RepoID, dimValue(d, by), d.Model, d.Repo}
	}
	for _, v := range values {
		args = append(args, v)
	}
	if _, err := tx.StmtContext(ctx, q).ExecContext(ctx, args...); err != nil {
		return fmt.Errorf("rolling up outcomes %s: %w", by, err)
	}
	return nil
}

// byKey is d as outcome_rollup_by keys it for by: the other dimensions
// but the repository and the model left out.
func byKey(d outcomes.Dims, by outcomes.Dimension) outcomes.Dims {
	k := outcomes.Dims{RepoID: d.RepoID, Repo: d.Repo, Model: d.Model}
	switch by {
	case outcomes.ByWeek:
		k.Week = d.Week
	case outcomes.ByTrigger:
		k.Trigger = d.Trigger
	case outcomes.ByPreset:
		k.Preset = d.Preset
	case outcomes.ByRequester:
		k.Requester = d.Requester
	}
	return k
}

// ApplyFateEvent applies ev to the PR's fate in one transaction with the
// rollup. seen (a review's, a comment's or a delivery's id) makes it
// once-only. changed is false when it changed nothing; ErrNotFound when
// Inspect did not open the PR.
func (s *Store) ApplyFateEvent(ctx context.Context, repoID int64, number int, seen string, ev outcomes.Event, now time.Time) (before, after outcomes.Fate, changed bool, err error) {
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		before, after, err = s.changeFate(ctx, tx, repoID, number, seen, now, func(f outcomes.Fate) (outcomes.Fate, bool) {
			return outcomes.Apply(f, ev)
		})
		return err
	})
	return before, after, err == nil && before != after, err
}

// SetFateOpenedAt corrects when a PR was opened (a backfill learns it from
// the API), in one transaction with the rollup.
func (s *Store) SetFateOpenedAt(ctx context.Context, repoID int64, number int, at, now time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, _, err := s.changeFate(ctx, tx, repoID, number, "", now, func(f outcomes.Fate) (outcomes.Fate, bool) {
			if at.IsZero() || f.OpenedAt.Equal(at) {
				return f, false
			}
			f.OpenedAt = at
			return f, true
		})
		return err
	})
}

// GetFate is one PR's fate.
func (s *Store) GetFate(ctx context.Context, repoID int64, number int) (outcomes.Fate, error) {
	f, err := scanFate(s.reader.QueryRowContext(ctx, `SELECT `+fateColumns+` FROM pr_fates WHERE repo_id = $1 AND number = $2`, repoID, number))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("PR fate %d#%d: %w", repoID, number, ErrNotFound)
	}
	return f, err
}

// FatesMergedAs are the fates whose merge commit is one of shas.
func (s *Store) FatesMergedAs(ctx context.Context, repoID int64, shas []string) ([]outcomes.Fate, error) {
	var out []outcomes.Fate
	for _, sha := range shas {
		f, err := scanFate(s.reader.QueryRowContext(ctx, `SELECT `+fateColumns+` FROM pr_fates WHERE repo_id = $1 AND merge_sha = $2`, repoID, sha))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// MergedFatesSince are a repository's fates merged at or after since and
// not reverted, the newest limit of them: those a new commit on the
// default branch may revert.
func (s *Store) MergedFatesSince(ctx context.Context, repoID int64, since time.Time, limit int) ([]outcomes.Fate, error) {
	return s.queryFates(ctx, `WHERE repo_id = $1 AND state = 'merged' AND merged_at >= $2 AND reverted_at = 0 AND merge_sha <> ''
		ORDER BY merged_at DESC LIMIT $3`, repoID, ms(since), limit)
}

func (s *Store) queryFates(ctx context.Context, where string, args ...any) ([]outcomes.Fate, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+fateColumns+` FROM pr_fates `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outcomes.Fate
	for rows.Next() {
		f, err := scanFate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// FatesToCheck are the open fates (and those a backfill marked) last
// checked against GitHub before staleBefore, oldest first, at most limit:
// reconcile's bounded pass.
func (s *Store) FatesToCheck(ctx context.Context, staleBefore time.Time, limit int) ([]outcomes.Fate, error) {
	return s.queryFates(ctx, `WHERE (state = 'open' OR checked_at = 0) AND checked_at < $1 ORDER BY checked_at, repo_id, number LIMIT $2`,
		ms(staleBefore), limit)
}

// MarkFateChecked records that reconcile asked GitHub about a PR.
func (s *Store) MarkFateChecked(ctx context.Context, repoID int64, number int, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE pr_fates SET checked_at = $3 WHERE repo_id = $1 AND number = $2`, repoID, number, max(ms(now), 1))
	return err
}

// BackfillFates gives every PR Inspect's sessions opened a fate (those
// recorded before fates were kept, as open, opened when their session
// ended) and marks every fate of the installation (0: all) to be checked
// against GitHub by reconcile's next passes, which keep to the outbound
// limits. It returns how many fates it created.
func (s *Store) BackfillFates(ctx context.Context, installationID int64, now time.Time) (int, error) {
	created := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		sessions, err := s.querySessionsIn(ctx, tx, `WHERE pr_number <> 0 AND ($1 = 0 OR installation_id = $1)
			AND NOT EXISTS (SELECT 1 FROM pr_fates f WHERE f.repo_id = sessions.repo_id AND f.number = sessions.pr_number)
			ORDER BY created_at`, installationID)
		if err != nil {
			return err
		}
		for _, sess := range sessions {
			if !sess.OpensPR() {
				continue
			}
			opened := sess.EndedAt
			if opened.IsZero() {
				opened = sess.UpdatedAt
			}
			if err := s.followSession(ctx, tx, Session{}, sess, opened); err != nil {
				return err
			}
			created++
		}
		_, err = tx.ExecContext(ctx, `UPDATE pr_fates SET checked_at = 0 WHERE ($1 = 0 OR installation_id = $1)`, installationID)
		return err
	})
	return created, err
}

// OutcomeFilter selects rollup rows; every value is matched exactly, never
// put into SQL text.
type OutcomeFilter struct {
	// RepoIDs are the repositories that may be counted; nil: all (the CLI),
	// empty: none (a user who can read none).
	RepoIDs                                 []int64
	AllRepos                                bool
	Repo, Trigger, Preset, Model, Requester string
	// Since is the first week counted (outcomes.Week's spelling); "" for all.
	Since string
}

// OutcomeGroup is one group's counts for one model (money is priced per
// model, so the caller sums the models of a key: outcomes.Report).
type OutcomeGroup = outcomes.Group

// dimensionColumns are the rollup's columns by dimension: the only text
// that reaches SQL from a request, and only through this table.
var dimensionColumns = map[outcomes.Dimension]string{
	outcomes.ByRepo: "repo", outcomes.ByTrigger: "trigger_kind", outcomes.ByPreset: "preset",
	outcomes.ByModel: "model", outcomes.ByRequester: "requester", outcomes.ByWeek: "week",
}

// OutcomeGroups sums the rollup by a dimension (and by model, for money)
// over the rows f selects: outcome_rollup_by when f filters by nothing but
// repository, else the rollup of every dimension at once.
func (s *Store) OutcomeGroups(ctx context.Context, by outcomes.Dimension, f OutcomeFilter) ([]OutcomeGroup, error) {
	col, ok := dimensionColumns[by]
	if !ok {
		return nil, fmt.Errorf("outcomes: no dimension %q", by)
	}
	if !f.AllRepos && len(f.RepoIDs) == 0 {
		return nil, nil
	}
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	table := "outcome_rollup"
	if f.Trigger == "" && f.Preset == "" && f.Model == "" && f.Requester == "" && f.Since == "" {
		table, col = "outcome_rollup_by", "value"
		where = append(where, "dim = "+arg(string(by)))
	}
	if !f.AllRepos {
		ids := make([]string, len(f.RepoIDs))
		for i, id := range f.RepoIDs {
			ids[i] = arg(id)
		}
		where = append(where, "repo_id IN ("+strings.Join(ids, ",")+")")
	}
	for _, c := range []struct{ col, v string }{{"repo", f.Repo}, {"trigger_kind", f.Trigger}, {"preset", f.Preset}, {"model", f.Model}, {"requester", f.Requester}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	if f.Since != "" {
		where = append(where, "week >= "+arg(f.Since))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	groupBy := col + ", model"
	if col == "model" {
		groupBy = "model"
	}
	valueCols := rollupValueColumns()
	sums := make([]string, len(valueCols))
	for i, c := range valueCols {
		sums[i] = "SUM(" + c + ")"
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+col+`, model, `+strings.Join(sums, ", ")+` FROM `+table+cond+
		` GROUP BY `+groupBy+` ORDER BY `+groupBy, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OutcomeGroup
	values := make([]int64, len(valueCols))
	dest := []any{nil, nil}
	for i := range values {
		dest = append(dest, &values[i])
	}
	for rows.Next() {
		var g OutcomeGroup
		dest[0], dest[1] = &g.Key, &g.Model
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		g.Counts = countsOf(values)
		out = append(out, g)
	}
	return out, rows.Err()
}

// querySessionsIn is querySessions inside tx.
func (s *Store) querySessionsIn(ctx context.Context, tx *sql.Tx, clause string, args ...any) ([]Session, error) {
	return querySessionsOn(ctx, tx, clause, args...)
}

// OutcomeTotals is the rollup summed by trigger, preset and model (the
// metrics' gauges, read at scrape time).
type OutcomeTotals struct {
	Trigger, Preset, Model                                string
	Sessions, Opened, Merged, Closed, Withdrawn, Reverted int64
}

// OutcomeTotalsByTriggerPresetModel sums the whole rollup by trigger, preset and model.
func (s *Store) OutcomeTotalsByTriggerPresetModel(ctx context.Context) ([]OutcomeTotals, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT trigger_kind, preset, model, SUM(sessions), SUM(opened), SUM(merged),
		SUM(closed), SUM(withdrawn), SUM(reverted) FROM outcome_rollup GROUP BY trigger_kind, preset, model ORDER BY trigger_kind, preset, model`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OutcomeTotals
	for rows.Next() {
		var t OutcomeTotals
		if err := rows.Scan(&t.Trigger, &t.Preset, &t.Model, &t.Sessions, &t.Opened, &t.Merged, &t.Closed, &t.Withdrawn, &t.Reverted); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// OutcomesFixture stores, in one transaction, fates and sessions as their
// own writes would have left the rollup (the same addRollup, summed per
// key first): each fate a session that opened that PR, each of noPR a
// session that opened none. It is for benchmarks over histories too long
// to play event by event; tests only (internal/layers holds it).
func (s *Store) OutcomesFixture(ctx context.Context, fates []outcomes.Fate, noPR []outcomes.Dims, now time.Time) error {
	sums := map[outcomes.Dims]*outcomes.Counts{}
	add := func(d outcomes.Dims, c outcomes.Counts) {
		if sums[d] == nil {
			sums[d] = &outcomes.Counts{}
		}
		sums[d].Add(c, 1)
	}
	for _, f := range fates {
		c := outcomes.Contribution(f)
		c.Sessions = 1
		add(f.Dims, c)
	}
	for _, d := range noPR {
		add(d, outcomes.Counts{Sessions: 1})
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		const batch = 200
		for start := 0; start < len(fates); start += batch {
			rows := fates[start:min(start+batch, len(fates))]
			var values []string
			var args []any
			for _, f := range rows {
				ph := make([]string, 0, 31)
				for _, a := range append(fateArgs(f), ms(now), ms(now)) {
					args = append(args, a)
					ph = append(ph, fmt.Sprintf("$%d", len(args)))
				}
				values = append(values, "("+strings.Join(ph, ",")+")")
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO pr_fates (`+fateColumns+`, checked_at, updated_at) VALUES `+strings.Join(values, ","), args...); err != nil {
				return err
			}
		}
		// Each row written once, as a table autovacuum keeps looks: the
		// sums of every key, then of each dimension's keys.
		for d, c := range sums {
			if err := s.addRollupRow(ctx, tx, "", d, *c, 1); err != nil {
				return err
			}
		}
		for _, by := range outcomes.Dimensions {
			bySums := map[outcomes.Dims]*outcomes.Counts{}
			for d, c := range sums {
				k := byKey(d, by)
				if bySums[k] == nil {
					bySums[k] = &outcomes.Counts{}
				}
				bySums[k].Add(*c, 1)
			}
			for k, c := range bySums {
				if err := s.addRollupRow(ctx, tx, by, k, *c, 1); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
