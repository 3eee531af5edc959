package fates

import (
	"context"

	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/store"
)

// MetricsSource is the store's rollup as the metrics' gauges read it.
func MetricsSource(st *store.Store) metrics.OutcomeSource {
	return func(ctx context.Context) ([]metrics.OutcomeSeries, error) {
		totals, err := st.OutcomeTotalsByTriggerPresetModel(ctx)
		out := make([]metrics.OutcomeSeries, len(totals))
		for i, t := range totals {
			out[i] = metrics.OutcomeSeries(t)
		}
		return out, err
	}
}

// RegisterMetrics puts the outcome gauges over st on m, and returns the
// counter of fate events for a Recorder.
func RegisterMetrics(m *metrics.Metrics, st *store.Store) (Counter, error) {
	// A service built again over the same registry reads its own store.
	m.Unregister(metrics.OutcomeCollector{})
	err := m.Register(metrics.OutcomeCollector{Source: MetricsSource(st)})
	return m.FateEvent, err
}
