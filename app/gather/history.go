package gather

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// earlierSessions are a follow-up's history: each earlier session on the
// pull request (or the one that opened it), its request and what the
// agent answered.
func (g Gatherer) earlierSessions(ctx context.Context, sess store.Session) ([]contract.ContextItem, error) {
	var all []store.Session
	var err error
	if sess.Target().IsPullRequest() || sess.Info().Continues == "" {
		all, err = g.Store.SessionsForPull(ctx, sess.RepoID, sess.Number, 100)
	} else {
		// A continuation on an issue (decision 0072): the issue's
		// sessions, newest first as the store lists them.
		all, err = g.Store.SessionsForTarget(ctx, sess.RepoID, sess.Number, 100)
		slices.Reverse(all) // oldest first, as SessionsForPull lists them
	}
	if err != nil {
		return nil, err
	}
	var earlier []store.Session
	for _, e := range all {
		if e.ID != sess.ID && e.State() == session.Done && e.Outcome != session.Refused && e.Instructions != "" {
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
		// The messages that steered it (decision 0071), in order.
		turns, err := g.Store.SessionTurns(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range turns {
			switch {
			case t.Stop:
				fmt.Fprintf(&b, "\nThen @%s stopped the agent.\n", t.AuthorLogin)
			case t.State == session.TurnDone && t.Outcome == store.TurnUndelivered:
				// Never seen by the agent: it became a session of its own.
			default:
				fmt.Fprintf(&b, "\nThen @%s said:\n\n%s\n", t.AuthorLogin, t.Message)
			}
		}
		if answer := g.finalAnswer(ctx, e); answer != "" {
			fmt.Fprintf(&b, "\nThe agent's final answer:\n\n%s\n", answer)
		}
		items = append(items, contract.ContextItem{Kind: contract.ContextEarlierSession, Author: e.RequesterLogin, Text: clip(b.String()), Untrusted: true})
	}
	return items, nil
}

// finalAnswer is what a session's agent answered, from its attempt's
// stored result ("" when there is none).
func (g Gatherer) finalAnswer(ctx context.Context, sess store.Session) string {
	if sess.AttemptID == "" {
		return ""
	}
	a, err := g.Store.GetAttempt(ctx, sess.AttemptID)
	if err != nil || a.Result == "" {
		return ""
	}
	var up contract.ResultUpload
	if err := json.Unmarshal([]byte(a.Result), &up); err != nil {
		return ""
	}
	return strings.TrimSpace(up.Evidence.FinalAnswer)
}
