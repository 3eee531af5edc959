package faults_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/fakegithub"
)

// One user posts 50 /inspect comments at once, on 50 issues, to two
// replicas. Content-creating requests to GitHub are limited to 20 in any
// 10 seconds per installation, fleet-wide; the per-user cap is 2 active
// sessions and the repository's daily budget 10. The cap holds at every
// moment, the budget's ten run, the other forty are refused with one
// reply each, and the stand-in never sees more than 20 content-creating
// requests in a 10-second window.
func TestFloodFromOneUserStaysUnderEveryLimit(t *testing.T) {
	t.Parallel() // mostly waiting on the limit: it runs beside the crash tests
	const comments, perUser, budget = 50, 2, 10
	const limit, window = 20, 10 * time.Second
	f := newFleet(t, fleetOptions{set: map[string]any{
		"limits.active_per_user":   perUser,
		"limits.daily_per_repo":    budget,
		"github.outbound.creates":  []map[string]any{{"limit": limit, "window": window.String()}},
		"github.outbound.max_wait": "2s",
	}})
	f.start()
	f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for n := 1; n <= comments; n++ {
		f.issue(n)
		payload := f.comment(n, fmt.Sprintf("/inspect task %d", n))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := f.gh.Deliver(ctx, "issue_comment", payload); d.StatusCode != 200 {
				t.Errorf("delivery %d: %d %s", n, d.StatusCode, d.Status)
			}
		}()
	}
	wg.Wait()
	all := f.waitDone(comments, 4*time.Minute)

	outcomes := map[string]int{}
	for _, s := range all {
		outcomes[s.Outcome+"/"+s.Reason]++
	}
	if outcomes["no_change/no_change"] != budget || outcomes["refused/daily_budget"] != comments-budget {
		t.Errorf("outcomes = %v over %d sessions, want %d no_change and the rest refused", outcomes, len(all), budget)
	}
	if most := f.maxActive(); most > perUser {
		t.Errorf("at one moment %d sessions of one user were active, cap %d", most, perUser)
	}
	for n := 1; n <= comments; n++ {
		if c := botComments(f.gh, n); len(c) != 1 {
			t.Errorf("#%d has %d bot comments, want 1", n, len(c))
		}
	}
	busiest := f.gh.BusiestWindow(fakegithub.IsContentCreating, window)
	peak := len(busiest)
	if peak > limit {
		t.Errorf("the stand-in saw %d content-creating requests in %s, limit %d: %v", peak, window, limit, byRoute(busiest))
	}
	// The limit was what paced the flood, or the test proves nothing.
	if peak < limit/2 {
		t.Errorf("peak %d content-creating requests in %s: the flood never pressed the limit %d", peak, window, limit)
	}
	t.Logf("outcomes %v; peak %d content-creating requests in %s (limit %d)", outcomes, peak, window, limit)
}

// maxActive is the most sessions active at one moment, from when each was
// admitted past the caps to when it ended.
func (f *fleet) maxActive() int {
	f.t.Helper()
	rows, err := f.db.Query(`SELECT admitted_at, ended_at FROM sessions WHERE admitted_at > 0`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for rows.Next() {
		var from, to int64
		if err := rows.Scan(&from, &to); err != nil {
			f.t.Fatal(err)
		}
		edges = append(edges, edge{from, +1}, edge{to, -1})
	}
	// Ends before starts at one instant: a slot freed and taken at once
	// is not two at a time.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	most, cur := 0, 0
	for _, e := range edges {
		cur += e.delta
		most = max(most, cur)
	}
	return most
}

var digits = regexp.MustCompile(`/[0-9]+`)

// byRoute counts requests by method and route (numbers elided), to say
// what filled a window.
func byRoute(reqs []fakegithub.Request) map[string]int {
	by := map[string]int{}
	for _, r := range reqs {
		by[fmt.Sprintf("%s %s", r.Method, digits.ReplaceAllString(r.Path, "/N"))]++
	}
	return by
}
