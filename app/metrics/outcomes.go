package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The outcomes of the PRs Inspect opened (issue 38): a counter of fate
// events as they happen, and gauges read from the store's rollup at scrape
// time. No series carries a user: requester is a dimension of the page and
// the CLI only.

// OutcomeSeries is one (trigger, preset, model)'s figures in the rollup.
type OutcomeSeries struct {
	Trigger, Preset, Model                                string
	Sessions, Opened, Merged, Closed, Withdrawn, Reverted int64
}

// OutcomeSource reads the rollup at scrape time.
type OutcomeSource func(ctx context.Context) ([]OutcomeSeries, error)

var (
	outcomeSessionsDesc = prometheus.NewDesc("inspect_outcome_sessions", "Sessions that ended, by trigger, agent preset and model (the rollup's count, read at scrape time).",
		[]string{"trigger", "preset", "model"}, nil)
	outcomePRsDesc = prometheus.NewDesc("inspect_outcome_prs", "PRs Inspect opened, by fate as it stands (opened, merged, closed_unmerged, withdrawn, reverted), trigger, agent preset and model.",
		[]string{"fate", "trigger", "preset", "model"}, nil)
	outcomeRateDesc = prometheus.NewDesc("inspect_outcome_acceptance_ratio", "Merged PRs over PRs opened, withdrawn ones left out, by trigger, agent preset and model (absent while none counts).",
		[]string{"trigger", "preset", "model"}, nil)
)

// OutcomeCollector reads the rollup at each scrape, bounded by Timeout.
type OutcomeCollector struct {
	Source  OutcomeSource
	Timeout time.Duration
}

// Describe implements prometheus.Collector.
func (c OutcomeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outcomeSessionsDesc
	ch <- outcomePRsDesc
	ch <- outcomeRateDesc
}

// Collect implements prometheus.Collector.
func (c OutcomeCollector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	series, err := c.Source(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(outcomePRsDesc, err)
		return
	}
	for _, s := range series {
		ch <- prometheus.MustNewConstMetric(outcomeSessionsDesc, prometheus.GaugeValue, float64(s.Sessions), s.Trigger, s.Preset, s.Model)
		for fate, n := range map[string]int64{"opened": s.Opened, "merged": s.Merged, "closed_unmerged": s.Closed,
			"withdrawn": s.Withdrawn, "reverted": s.Reverted} {
			ch <- prometheus.MustNewConstMetric(outcomePRsDesc, prometheus.GaugeValue, float64(n), fate, s.Trigger, s.Preset, s.Model)
		}
		if counted := s.Opened - s.Withdrawn; counted > 0 {
			ch <- prometheus.MustNewConstMetric(outcomeRateDesc, prometheus.GaugeValue, float64(s.Merged)/float64(counted), s.Trigger, s.Preset, s.Model)
		}
	}
}

// FateEvent counts one change of a PR's fate: kind is opened, merged,
// closed, withdrawn, reopened, reverted, review, review_round,
// review_comment, thread_comment or later_turn.
func (m *Metrics) FateEvent(kind, trigger, preset, model string) {
	m.fateEvents.WithLabelValues(kind, trigger, preset, model).Inc()
}
