package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/outcomes/outcomestest"
	"github.com/inspecthq/inspect/app/store"
)

// figures reads the rollup by a dimension, summed over models.
func figures(t *testing.T, s *store.Store, by outcomes.Dimension, f store.OutcomeFilter) map[string]outcomes.Figures {
	t.Helper()
	groups, err := s.OutcomeGroups(context.Background(), by, f)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]*outcomes.Counts{}
	for _, g := range groups {
		if sums[g.Key] == nil {
			sums[g.Key] = &outcomes.Counts{}
		}
		sums[g.Key].Add(g.Counts, 1)
	}
	out := map[string]outcomes.Figures{}
	for k, c := range sums {
		out[k] = outcomes.Summarize(k, *c, 0, false)
	}
	return out
}

// The 40 scripted sessions of outcomestest.Scripted40, their figures by
// preset and by model computed by hand from the script's table (the
// comments show the sorted values each median is read from; every minute
// value is one of outcomes.Buckets', so the medians are exact).
func TestOutcomesByPresetAndModel(t *testing.T) {
	type want struct {
		sessions, opened, merged, closed, withdrawn, reverted int64
		rate                                                  float64
		rounds, comments, minutes                             float64
	}
	wants := map[outcomes.Dimension]map[string]want{
		outcomes.ByPreset: {
			// merged rounds 0,0,1,1,2,3; comments 0,1,2,3,4,6; minutes 20,30,45,60,90,120
			"codex": {14, 11, 6, 2, 2, 1, 6.0 / 9, 1, 2.5, 52.5},
			// rounds 0,1,1,1,2,2,4; comments 0,1,2,2,3,5,8; minutes 10,15,40,55,75,180,300
			"claude-code": {14, 11, 7, 2, 1, 1, 7.0 / 10, 1, 2, 55},
			// rounds 0,0,1,2,2,3; comments 0,1,1,2,4,7; minutes 5,25,35,50,75,150
			"opencode": {12, 10, 6, 2, 1, 1, 6.0 / 9, 1.5, 1.5, 42.5},
		},
		outcomes.ByModel: {
			// rounds 0,0,0,1,1,2,2,3; comments 0,1,1,2,2,3,4,6; minutes 20,25,30,35,45,60,90,120
			"gpt-a": {20, 16, 8, 3, 3, 1, 8.0 / 13, 1, 2, 40},
			// rounds 0,0,1,1,1,1,2,2,2,3,4; comments 0,0,1,1,2,2,3,4,5,7,8; minutes 5,10,15,40,50,55,75,75,150,180,300
			"claude-b": {20, 16, 11, 3, 1, 2, 11.0 / 15, 1, 2, 55},
		},
	}
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		if err := outcomestest.Seed(context.Background(), s, "h", t0, outcomestest.Scripted40()); err != nil {
			t.Fatal(err)
		}
		for by, groups := range wants {
			got := figures(t, s, by, store.OutcomeFilter{AllRepos: true})
			// The rollup of every dimension at once (a filter on the week
			// reads it) agrees with the one by each dimension alone.
			if all := figures(t, s, by, store.OutcomeFilter{AllRepos: true, Since: "2000-01-03"}); !reflect.DeepEqual(all, got) {
				t.Errorf("by %s: the two rollups differ:\n%+v\n%+v", by, all, got)
			}
			if len(got) != len(groups) {
				t.Errorf("by %s: groups %v, want %d", by, got, len(groups))
			}
			for key, w := range groups {
				g := got[key]
				if g.Sessions != w.sessions || g.Opened != w.opened || g.Merged != w.merged || g.Closed != w.closed ||
					g.Withdrawn != w.withdrawn || g.Reverted != w.reverted {
					t.Errorf("by %s %s: counts %+v, want %+v", by, key, g, w)
				}
				if !g.HasRate || abs(g.AcceptanceRate-w.rate) > 1e-9 {
					t.Errorf("by %s %s: acceptance %v, want %v", by, key, g.AcceptanceRate, w.rate)
				}
				if g.MedianRounds != w.rounds || g.MedianComments != w.comments || g.MedianMergeMinutes != w.minutes {
					t.Errorf("by %s %s: medians %v %v %v, want %v %v %v", by, key, g.MedianRounds, g.MedianComments,
						g.MedianMergeMinutes, w.rounds, w.comments, w.minutes)
				}
				if g.TokensPerMerged != 1000 {
					t.Errorf("by %s %s: tokens per merged %v, want 1000", by, key, g.TokensPerMerged)
				}
			}
		}
		// The rollup is what the fates say: a recount from pr_fates agrees.
		if got := figures(t, s, outcomes.ByRepo, store.OutcomeFilter{RepoIDs: []int64{999}}); len(got) != 0 {
			t.Errorf("a repository nobody may read shows %v", got)
		}
	})
}

// A fate that changes is counted once, as it stands: closed, reopened and
// merged is one merged PR; a redelivered review counts once.
func TestAFateIsCountedOnceAsItStands(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		row := outcomestest.Row{Repo: "acme/app", RepoID: 501, Preset: "codex", Model: "m", Requester: "alice", Fate: 'O', Tokens: 10}
		if err := outcomestest.Seed(ctx, s, "x", t0, []outcomestest.Row{row}); err != nil {
			t.Fatal(err)
		}
		rev := outcomes.Actor{Login: "rev"}
		steps := []struct {
			seen string
			ev   outcomes.Event
		}{
			{"review:1", outcomes.Event{Kind: outcomes.EventReview, ReviewState: "changes_requested", At: t0.Add(time.Minute), Actor: rev}},
			{"review:1", outcomes.Event{Kind: outcomes.EventReview, ReviewState: "changes_requested", At: t0.Add(time.Minute), Actor: rev}},
			{"", outcomes.Event{Kind: outcomes.EventClosed, At: t0.Add(time.Hour), Actor: rev}},
			{"", outcomes.Event{Kind: outcomes.EventReopened, At: t0.Add(2 * time.Hour), Actor: rev}},
			{"", outcomes.Event{Kind: outcomes.EventClosed, Merged: true, At: t0.Add(3 * time.Hour), Actor: rev}},
		}
		for _, st := range steps {
			if _, _, _, err := s.ApplyFateEvent(ctx, 501, 100, st.seen, st.ev, st.ev.At); err != nil {
				t.Fatal(err)
			}
		}
		g := figures(t, s, outcomes.ByRepo, store.OutcomeFilter{AllRepos: true})["acme/app"]
		if g.Opened != 1 || g.Merged != 1 || g.Closed != 0 || g.MedianRounds != 1 || g.MedianMergeMinutes != 180 {
			t.Errorf("figures %+v, want one PR merged after one round in 180 minutes", g)
		}
	})
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
