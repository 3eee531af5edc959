package config

import (
	"strings"
	"testing"
	"time"

	"github.com/inspecthq/inspect/session"
)

func TestRepoSteerAndTurnTimeout(t *testing.T) {
	for in, want := range map[string]session.SteerMode{"": session.SteerInterrupt, "steer: interrupt\n": session.SteerInterrupt,
		"steer: queue\n": session.SteerQueue, "steer: off\n": session.SteerOff, "steer: \"off\"\n": session.SteerOff} {
		r, err := ParseRepo([]byte(in))
		if err != nil || r.SteerMode() != want {
			t.Errorf("%q: %v, %v; want %v", in, r.SteerMode(), err, want)
		}
	}
	if _, err := ParseRepo([]byte("steer: later\n")); err == nil || !strings.Contains(err.Error(), "steer:") {
		t.Errorf("an unknown steer mode: %v", err)
	}
	if _, err := ParseRepo([]byte("limits:\n  turn_timeout: -1m\n")); err == nil || !strings.Contains(err.Error(), "limits.turn_timeout") {
		t.Errorf("a negative turn timeout: %v", err)
	}
	r, err := ParseRepo([]byte("limits:\n  turn_timeout: 10m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.TurnTimeout(time.Hour); got != 10*time.Minute {
		t.Errorf("within the session's: %v", got)
	}
	if got := r.TurnTimeout(5 * time.Minute); got != 0 {
		t.Errorf("past the session's timeout the turn has none of its own: %v", got)
	}
}
