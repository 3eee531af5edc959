// Package fakeclock is a manually advanced clock for tests.
package fakeclock

import (
	"sync"
	"time"
)

// Clock starts at a fixed time and moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock set to start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
