package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/outcomes/outcomestest"
	"github.com/inspecthq/inspect/config"
)

// The outcomes page counts only the repositories the user can read, by
// the dimension asked, with its charts drawn as SVG and money at the
// server's prices.
func TestOutcomesPageShowsOnlyReadableRepositories(t *testing.T) {
	cfg := config.Defaults()
	cfg.Agents.Models = []config.Model{{Name: "gpt-a", InputPrice: 1, OutputPrice: 2}}
	w := newWorldWith(t, func(o *Options) { o.Cost = cfg.ModelCost })
	ctx := context.Background()
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	var visible, hidden []outcomestest.Row
	for _, r := range outcomestest.Scripted40()[:14] { // codex on gpt-a
		r.Repo, r.RepoID = "acme/widgets", 101
		visible = append(visible, r)
		r.Repo, r.RepoID, r.Fate = "acme/secret", 102, 'M'
		hidden = append(hidden, r)
	}
	if err := outcomestest.Seed(ctx, w.st, "v", t0, visible); err != nil {
		t.Fatal(err)
	}
	if err := outcomestest.Seed(ctx, w.st, "s", t0, hidden); err != nil {
		t.Fatal(err)
	}
	w.signIn(t)
	code, body := w.get(t, "/outcomes")
	if code != 200 {
		t.Fatalf("outcomes page: %d %s", code, body)
	}
	if strings.Contains(body, "acme/secret") {
		t.Error("the page shows a repository the user cannot read")
	}
	row := between(body, `data-key="acme/widgets"`, "</tr>")
	// codex on gpt-a by hand (store's TestOutcomesByPresetAndModel): 14
	// sessions, 11 opened, 6 merged, 2 closed, 2 withdrawn, 1 reverted,
	// 6/9 accepted; medians 1 round, 2.5 comments, 52.5 minutes; 1000
	// tokens (600 in at $1/M, 400 out at $2/M: $0.0014) per merged PR.
	for _, want := range []string{`class="sessions">14<`, `class="opened">11<`, `class="merged">6<`, `class="closed">2<`,
		`class="withdrawn">2<`, `class="reverted">1<`, `class="rate">67%<`, `class="rounds">1<`, `class="comments">2.5<`,
		`class="ttm">52.5 min<`, `class="cost">$0.0014<`, `class="tokens">1000<`} {
		if !strings.Contains(row, want) {
			t.Errorf("the row lacks %s: %s", want, row)
		}
	}
	if !strings.Contains(body, `<svg id="fates-chart"`) || !strings.Contains(body, `<rect class="merged"`) || strings.Contains(body, "<script") {
		t.Error("the charts are not server-drawn SVG")
	}
	_, byPreset := w.get(t, "/outcomes?by=preset&trigger=comment")
	if !strings.Contains(byPreset, `data-key="codex"`) || strings.Contains(byPreset, `class="sessions">14<`) {
		t.Errorf("by preset, comments only: %s", between(byPreset, `<tbody>`, `</tbody>`))
	}
	if code, _ := w.get(t, "/outcomes?by=evil%27"); code != 400 {
		t.Errorf("an unknown grouping: %d", code)
	}
	if _, other := w.get(t, "/outcomes?repo=acme/secret"); !strings.Contains(other, `id="empty"`) {
		t.Error("naming a repository the user cannot read shows its outcomes")
	}
}
