// Package outcomestest scripts histories of sessions and the fates of
// their PRs into a real store, for the outcomes' tests and benchmark.
package outcomestest

import (
	"context"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/session"
)

// Row is one scripted session and what became of its PR.
type Row struct {
	Repo      string // owner/name; RepoID is derived from it by the caller's table
	RepoID    int64
	Trigger   session.TriggerKind
	Preset    string
	Model     string
	Requester string
	// Fate: 'M' merged, 'R' merged then reverted, 'C' closed unmerged by a
	// reviewer, 'W' withdrawn by its requester, 'O' open, 'N' no PR.
	Fate byte
	// Rounds, Comments and Minutes (to merge) for merged ones.
	Rounds, Comments, Minutes int
	// Tokens is the session's total (60% input, 40% output).
	Tokens int64
}

// Scripted40 is the history of 40 sessions whose figures by preset and
// model the tests compute by hand (see store's TestOutcomesByPresetAndModel).
func Scripted40() []Row {
	type f struct {
		fate               byte
		rounds, cmts, mins int
	}
	groups := []struct {
		preset, model string
		fates         []f
	}{
		{"codex", "gpt-a", []f{{'M', 1, 2, 30}, {'M', 0, 1, 45}, {'M', 2, 4, 90}, {'R', 1, 3, 60}, {'C', 0, 0, 0}, {'W', 0, 0, 0},
			{'O', 0, 0, 0}, {'N', 0, 0, 0}, {'N', 0, 0, 0}, {'M', 0, 0, 20}, {'C', 0, 0, 0}, {'M', 3, 6, 120}, {'W', 0, 0, 0}, {'N', 0, 0, 0}}},
		{"claude-code", "claude-b", []f{{'M', 1, 1, 15}, {'R', 2, 5, 180}, {'M', 2, 3, 40}, {'C', 0, 0, 0}, {'C', 0, 0, 0}, {'O', 0, 0, 0},
			{'N', 0, 0, 0}, {'M', 0, 0, 10}, {'W', 0, 0, 0}, {'M', 1, 2, 55}, {'N', 0, 0, 0}, {'N', 0, 0, 0}, {'M', 4, 8, 300}, {'M', 1, 2, 75}}},
		{"opencode", "gpt-a", []f{{'M', 0, 1, 25}, {'C', 0, 0, 0}, {'N', 0, 0, 0}, {'M', 2, 2, 35}, {'O', 0, 0, 0}, {'W', 0, 0, 0}}},
		{"opencode", "claude-b", []f{{'R', 3, 7, 150}, {'M', 1, 1, 50}, {'M', 0, 0, 5}, {'N', 0, 0, 0}, {'C', 0, 0, 0}, {'M', 2, 4, 75}}},
	}
	triggers := []session.TriggerKind{session.KindComment, session.KindLabel, session.KindReviewComment, session.KindDashboard}
	var rows []Row
	for _, g := range groups {
		for _, x := range g.fates {
			i := len(rows)
			rows = append(rows, Row{Repo: "acme/app", RepoID: 501, Trigger: triggers[i%len(triggers)], Preset: g.preset, Model: g.model,
				Requester: []string{"alice", "bob"}[i%2], Fate: x.fate, Rounds: x.rounds, Comments: x.cmts, Minutes: x.mins, Tokens: 1000})
		}
	}
	return rows
}

// Seed stores rows as sessions that ran (an attempt with the preset and
// model in its spec, the tokens counted), ended, opened their PR (number
// 100+i) at t0 plus i hours, and then met their fate through the store's
// ApplyFateEvent, as the webhooks would. idPrefix keeps ids apart.
func Seed(ctx context.Context, st *store.Store, idPrefix string, t0 time.Time, rows []Row) error {
	for i, r := range rows {
		at := t0.Add(time.Duration(i) * time.Hour)
		id := fmt.Sprintf("%s%d", idPrefix, i)
		owner, name := splitRepo(r.Repo)
		sess := store.Fixture(session.Running, store.Session{ID: id, RepoID: r.RepoID, RepoOwner: owner, RepoName: name,
			InstallationID: 9, Number: 5000 + i, TriggerKind: r.Trigger, DeliveryID: "d-" + id, RequesterLogin: r.Requester,
			RequesterID: 1, RequesterType: "User", Instructions: "fix it", CreatedAt: at})
		if err := st.CreateSession(ctx, &sess, nil, at); err != nil {
			return err
		}
		spec := fmt.Sprintf(`{"agent":{"preset":%q,"model":%q}}`, r.Preset, r.Model)
		if err := st.CreateAttempt(ctx, store.Attempt{ID: "a-" + id, SessionID: id, Spec: spec, Deadline: at.Add(time.Hour)}, "c", at); err != nil {
			return err
		}
		in := r.Tokens * 6 / 10
		if _, err := st.AddUsage(ctx, "a-"+id, store.Usage{InputTokens: in, OutputTokens: r.Tokens - in, TotalTokens: r.Tokens, Requests: 1}, at); err != nil {
			return err
		}
		pr := 100 + i
		if _, err := st.MutateSession(ctx, id, at, func(x *store.Session) error {
			if r.Fate == 'N' {
				return x.End(session.NoChange, "", "")
			}
			x.PRNumber = pr
			return x.End(session.Changed, "", "")
		}); err != nil {
			return err
		}
		if err := Meet(ctx, st, r, pr, at); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
	}
	return nil
}

// Meet applies r's fate to PR pr, opened at `at`.
func Meet(ctx context.Context, st *store.Store, r Row, pr int, at time.Time) error {
	apply := func(seen string, ev outcomes.Event) error {
		_, _, _, err := st.ApplyFateEvent(ctx, r.RepoID, pr, seen, ev, ev.At)
		return err
	}
	reviewer := outcomes.Actor{Login: "rev"}
	for k := 0; k < r.Rounds; k++ {
		if err := apply(fmt.Sprintf("review:%d-%d", pr, k), outcomes.Event{Kind: outcomes.EventReview, ReviewState: "changes_requested",
			At: at.Add(time.Minute), Actor: reviewer}); err != nil {
			return err
		}
	}
	for k := 0; k < r.Comments; k++ {
		if err := apply(fmt.Sprintf("rc:%d-%d", pr, k), outcomes.Event{Kind: outcomes.EventReviewComment, At: at.Add(time.Minute), Actor: reviewer}); err != nil {
			return err
		}
	}
	switch r.Fate {
	case 'M', 'R':
		merged := at.Add(time.Duration(r.Minutes) * time.Minute)
		if err := apply("", outcomes.Event{Kind: outcomes.EventClosed, Merged: true, MergeSHA: fmt.Sprintf("%040x", pr), At: merged, Actor: reviewer}); err != nil {
			return err
		}
		if r.Fate == 'R' {
			return apply("", outcomes.Event{Kind: outcomes.EventReverted, RevertedBy: "test", At: merged.Add(24 * time.Hour)})
		}
	case 'C':
		return apply("", outcomes.Event{Kind: outcomes.EventClosed, At: at.Add(time.Hour), Actor: reviewer})
	case 'W':
		return apply("", outcomes.Event{Kind: outcomes.EventClosed, At: at.Add(5 * time.Minute), Actor: outcomes.Actor{Login: r.Requester}})
	}
	return nil
}

func splitRepo(full string) (string, string) {
	for i := 0; i < len(full); i++ {
		if full[i] == '/' {
			return full[:i], full[i+1:]
		}
	}
	return full, ""
}
