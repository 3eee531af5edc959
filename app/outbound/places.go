package outbound

import (
	"context"
	"sync"
)

// places are the in-flight places of one replica: at most limit requests
// at once, where limit may change while requests wait (the replica's share
// of the fleet's, as replicas come and go; SetMaxConcurrent).
type places struct {
	mu    sync.Mutex
	limit int
	used  int
	// changed is closed, and replaced, whenever a place frees or the
	// limit changes, waking every waiter to look again.
	changed chan struct{}
}

func newPlaces(limit int) *places {
	return &places{limit: limit, changed: make(chan struct{})}
}

// take waits for a place, or for ctx; full is called once when none is
// free at first (a test hook; nil: none).
func (p *places) take(ctx context.Context, full func()) error {
	called := false
	for {
		p.mu.Lock()
		if p.used < p.limit {
			p.used++
			p.mu.Unlock()
			return nil
		}
		changed := p.changed
		p.mu.Unlock()
		if !called && full != nil {
			full()
		}
		called = true
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// give frees a place.
func (p *places) give() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used--
	p.wakeLocked()
}

// setLimit changes the limit. Requests already in flight above a lowered
// limit finish; no new one starts until they are under it.
func (p *places) setLimit(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = n
	p.wakeLocked()
}

// inUse is how many places are taken.
func (p *places) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

func (p *places) wakeLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}
