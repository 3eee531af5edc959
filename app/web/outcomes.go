package web

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/inspecthq/inspect/app/outcomes"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/session"
)

// The outcomes page (issue 38): what became of the PRs Inspect opened, by
// a dimension, over the repositories the user can read, from the rollup
// the store keeps on write (decision 0075). Its charts are SVG drawn here;
// the page runs no script.

// outcomeFilter is the page's query; each value is matched exactly in the
// store, never put into SQL text (the dimension is looked up in a table).
type outcomeFilter struct {
	By, Repo, Trigger, Preset, Model, Requester, Since string
}

// bar is one key's row of a chart, its geometry in the SVG's units.
type bar struct {
	Label string
	Y     int
	// TextY is the label's baseline; RateX where the rate's text starts.
	TextY, RateX int
	// Segments are the stacked parts (merged, closed unmerged, withdrawn,
	// still open), each from X with width W.
	Segments []segment
	// Rate is the acceptance rate's bar; RateText its label ("—": none).
	RateW    int
	RateText string
}

type segment struct {
	Class string
	X, W  int
	N     int64
}

const (
	// labelWidth is the room for the keys left of the bars, chartWidth
	// the bars' own, and 60 more on the right for the rate's text.
	labelWidth = 180
	chartWidth = 480
	barHeight  = 22
)

// outcomeRow is a table row: the figures, worded.
type outcomeRow struct {
	outcomes.Figures
	Rate, Rounds, Comments, TimeToMerge, Cost, Tokens string
}

func wordFigures(f outcomes.Figures) outcomeRow {
	r := outcomeRow{Figures: f, Rate: "—", Rounds: "—", Comments: "—", TimeToMerge: "—", Cost: "—", Tokens: "—"}
	if f.HasRate {
		r.Rate = fmt.Sprintf("%.0f%%", f.AcceptanceRate*100)
	}
	if f.HasMedians {
		r.Rounds = trimFloat(f.MedianRounds)
		r.Comments = trimFloat(f.MedianComments)
		r.TimeToMerge = minutesWord(f.MedianMergeMinutes)
		r.Tokens = fmt.Sprintf("%.0f", f.TokensPerMerged)
	}
	if f.HasCost {
		r.Cost = fmt.Sprintf("$%.4f", f.CostPerMerged)
	}
	return r
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

func minutesWord(m float64) string {
	switch {
	case m < 60:
		return trimFloat(m) + " min"
	case m < 48*60:
		return trimFloat(m/60) + " h"
	}
	return trimFloat(m/60/24) + " d"
}

// bars lays out rows as stacked bars of PRs by fate and bars of the
// acceptance rate, each scaled to the chart's width.
func bars(rows []outcomes.Figures) []bar {
	var most int64 = 1
	for _, f := range rows {
		most = max(most, f.Opened)
	}
	out := make([]bar, 0, len(rows))
	for i, f := range rows {
		b := bar{Label: shortLabel(labelOf(f.Key)), Y: i * (barHeight + 6), RateText: "—"}
		b.TextY = b.Y + barHeight - 6
		open := f.Opened - f.Merged - f.Closed - f.Withdrawn
		x := labelWidth
		for _, s := range []segment{{Class: "merged", N: f.Merged}, {Class: "closed", N: f.Closed}, {Class: "withdrawn", N: f.Withdrawn}, {Class: "open", N: open}} {
			s.X, s.W = x, int(s.N*chartWidth/most)
			x += s.W
			b.Segments = append(b.Segments, s)
		}
		if f.HasRate {
			b.RateW, b.RateText = int(f.AcceptanceRate*chartWidth), fmt.Sprintf("%.0f%%", f.AcceptanceRate*100)
		}
		b.RateX = labelWidth + b.RateW + 6
		out = append(out, b)
	}
	return out
}

// shortLabel cuts a long key for the chart (the table has it whole).
func shortLabel(s string) string {
	if r := []rune(s); len(r) > 24 {
		return string(r[:23]) + "…"
	}
	return s
}

func labelOf(key string) string {
	if key == "" {
		return "(none)"
	}
	return key
}

func (s *Server) outcomesPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	ctx := r.Context()
	repos, err := s.readable(ctx, v)
	if err != nil {
		s.failUnreadable(w, v, err)
		return
	}
	q := r.URL.Query()
	of := outcomeFilter{By: q.Get("by"), Repo: q.Get("repo"), Trigger: q.Get("trigger"), Preset: q.Get("preset"),
		Model: q.Get("model"), Requester: q.Get("requester"), Since: q.Get("since")}
	if of.By == "" {
		of.By = string(outcomes.ByRepo)
	}
	f := store.OutcomeFilter{RepoIDs: []int64{}, Trigger: of.Trigger, Preset: of.Preset, Model: of.Model, Requester: of.Requester, Since: of.Since}
	var names []string
	for id, rr := range repos {
		name := rr.Owner + "/" + rr.Name
		names = append(names, name)
		if of.Repo == "" || strings.EqualFold(of.Repo, name) {
			f.RepoIDs = append(f.RepoIDs, id) // a repository the user cannot read counts nothing
		}
	}
	sort.Strings(names)
	sort.Slice(f.RepoIDs, func(i, j int) bool { return f.RepoIDs[i] < f.RepoIDs[j] })
	groups, err := s.st.OutcomeGroups(ctx, outcomes.Dimension(of.By), f)
	if err != nil {
		s.log.Warn().Err(err).Str("by", of.By).Msg("dashboard: reading the outcomes failed")
		s.fail(w, http.StatusBadRequest, "Inspect could not read the outcomes by that. Choose another grouping, or try again.")
		return
	}
	var cost outcomes.CostFunc
	if s.cost != nil {
		cost = func(model string, t outcomes.Tokens) (float64, bool) {
			return s.cost(model, contract.TokenUsage{Input: t.Input, Output: t.Output, Total: t.Total, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite})
		}
	}
	rows, total := outcomes.Report(groups, cost)
	worded := make([]outcomeRow, len(rows))
	for i, f := range rows {
		worded[i] = wordFigures(f)
	}
	bs := bars(rows)
	s.render(w, http.StatusOK, "outcomes.html", map[string]any{
		"Viewer": v, "Filter": of, "Repos": names, "Rows": worded, "Total": wordFigures(total), "Bars": bs,
		"ChartHeight": len(bs)*(barHeight+6) + 4, "ChartWidth": labelWidth + chartWidth + 60, "BarHeight": barHeight, "LabelWidth": labelWidth,
		"Dimensions": outcomes.Dimensions,
		"Triggers":   []string{session.KindComment.StoredName(), session.KindReviewComment.StoredName(), session.KindLabel.StoredName(), session.KindRepair.StoredName(), session.KindRetry.StoredName(), session.KindDashboard.StoredName()},
	})
}
