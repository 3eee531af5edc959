// Package clock is where the app and its rooms read the time, so that tests
// drive it (internal/fakeclock) and nothing sleeps to wait for it.
package clock

import "time"

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns the current time.
func (System) Now() time.Time { return time.Now() }
