package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SessionCount is how many sessions are in one state, outcome and trigger.
type SessionCount struct {
	State, Outcome, Trigger string
	N                       int
}

// SnapshotBuilt is when a repository's newest snapshot was built.
type SnapshotBuilt struct {
	Repo    string
	BuiltAt time.Time
}

// Source is what the store counts at scrape time. Each method is one
// grouped query over an indexed column, cheap enough per scrape.
type Source interface {
	SessionCounts(ctx context.Context) ([]SessionCount, error)
	// WorkCounts is the work items by state (pending ones are the queue).
	WorkCounts(ctx context.Context) (map[string]int, error)
	// SandboxesRunning counts the attempts holding a sandbox, wherever
	// their executor runs them, by kind (session, snapshot).
	SandboxesRunning(ctx context.Context, now time.Time) (map[string]int, error)
	SnapshotsBuilt(ctx context.Context) ([]SnapshotBuilt, error)
}

// StoreCollector reads the Source's counts at each scrape, bounded by
// Timeout so a slow database cannot hold the scrape.
type StoreCollector struct {
	Source  Source
	Now     func() time.Time
	Timeout time.Duration
}

var (
	sessionsDesc  = prometheus.NewDesc("inspect_sessions", "Sessions in the store, by state, outcome and trigger.", []string{"state", "outcome", "trigger"}, nil)
	workDesc      = prometheus.NewDesc("inspect_work_items", "Work items in the store by state; pending ones are the queue depth.", []string{"state"}, nil)
	sandboxesDesc = prometheus.NewDesc("inspect_sandboxes_running", "Attempts holding a sandbox (sessions dispatched or running, snapshot builds under way), by kind.", []string{"kind"}, nil)
	snapshotDesc  = prometheus.NewDesc("inspect_snapshot_age_seconds", "Age of each repository's newest snapshot.", []string{"repo"}, nil)
)

// Describe implements prometheus.Collector.
func (c StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sessionsDesc, workDesc, sandboxesDesc, snapshotDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A query that fails leaves an
// invalid metric, which the handler reports while serving the rest.
func (c StoreCollector) Collect(ch chan<- prometheus.Metric) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if counts, err := c.Source.SessionCounts(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(sessionsDesc, err)
	} else {
		for _, s := range counts {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(s.N), s.State, s.Outcome, s.Trigger)
		}
	}
	if work, err := c.Source.WorkCounts(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(workDesc, err)
	} else {
		if _, ok := work["pending"]; !ok {
			work["pending"] = 0 // the queue depth is always there, 0 when empty
		}
		for state, n := range work {
			ch <- prometheus.MustNewConstMetric(workDesc, prometheus.GaugeValue, float64(n), state)
		}
	}
	if running, err := c.Source.SandboxesRunning(ctx, c.Now()); err != nil {
		ch <- prometheus.NewInvalidMetric(sandboxesDesc, err)
	} else {
		for _, kind := range []string{"session", "snapshot"} {
			if _, ok := running[kind]; !ok {
				running[kind] = 0
			}
		}
		for kind, n := range running {
			ch <- prometheus.MustNewConstMetric(sandboxesDesc, prometheus.GaugeValue, float64(n), kind)
		}
	}
	if built, err := c.Source.SnapshotsBuilt(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(snapshotDesc, err)
	} else {
		now := c.Now()
		for _, b := range built {
			ch <- prometheus.MustNewConstMetric(snapshotDesc, prometheus.GaugeValue, now.Sub(b.BuiltAt).Seconds(), b.Repo)
		}
	}
}
