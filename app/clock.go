package app

import "github.com/inspecthq/inspect/app/clock"

// Clock is clock.Clock: where the app reads the time.
type Clock = clock.Clock

// SystemClock is the real clock.
type SystemClock = clock.System
