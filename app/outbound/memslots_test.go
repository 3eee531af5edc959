package outbound

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"
)

// Window is at most Limit events in any Window (a sliding window).
type Window struct {
	Limit  int
	Window time.Duration
}

// memorySlots is a write budget kept in the test process, with the store's
// sliding-window rules (app/store's TakeRateSlot is the production one):
// the limiter's tests need no database.
type memorySlots struct {
	mu      sync.Mutex
	windows []Window
	longest time.Duration
	events  map[string][]time.Time // per key, oldest first
}

// NewMemorySlots is a budget of at most Limit events per key in any
// Window; windows with a non-positive limit or length are ignored.
func NewMemorySlots(windows []Window) Slots {
	m := &memorySlots{events: map[string][]time.Time{}}
	for _, w := range windows {
		if w.Limit > 0 && w.Window > 0 {
			m.windows = append(m.windows, w)
			m.longest = max(m.longest, w.Window)
		}
	}
	return m
}

func (m *memorySlots) Take(_ context.Context, key string, clock func() time.Time) (time.Duration, error) {
	if len(m.windows) == 0 {
		return 0, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := clock() // behind the lock, as the store reads it
	// Events older than the longest window count for nothing. (Keys stay:
	// one per installation that ever wrote, a few bytes each.)
	ev := m.events[key]
	ev = ev[after(ev, now.Add(-m.longest)):]
	var wait time.Duration
	for _, w := range m.windows {
		// An event at t counts while now < t+window.
		i := after(ev, now.Add(-w.Window))
		if n := len(ev) - i; n >= w.Limit {
			// The event that keeps the window full ages out at its time
			// plus the window.
			wait = max(wait, ev[i+n-w.Limit].Add(w.Window).Sub(now))
		}
	}
	if wait <= 0 {
		ev = slices.Insert(ev, after(ev, now), now) // kept sorted should the clock step back
	}
	m.events[key] = ev
	return wait, nil
}

// after is the index of the first event later than t.
func after(ev []time.Time, t time.Time) int {
	return sort.Search(len(ev), func(i int) bool { return ev[i].After(t) })
}
