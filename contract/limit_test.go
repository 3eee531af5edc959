package contract

import (
	"strings"
	"testing"
)

func TestLimitHitGoesWithOutcomeLimitExceededOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outcome OutcomeHint
		limit   *LimitHit
		want    string // "" is valid
	}{
		{"named", OutcomeLimitExceeded, &LimitHit{Name: LimitMemory, Value: 1 << 30, Command: "agent"}, ""},
		{"the session's memory", OutcomeLimitExceeded, &LimitHit{Name: LimitSessionMemory, Value: 8 << 30, Command: "agent"}, ""},
		{"the session's pids", OutcomeLimitExceeded, &LimitHit{Name: LimitSessionPids, Value: 8192, Command: "test"}, ""},
		{"missing", OutcomeLimitExceeded, nil, "limit: is required"},
		{"on another outcome", OutcomeAgentFailed, &LimitHit{Name: LimitPids, Value: 64, Command: "agent"}, "limit: is only for outcome limit_exceeded"},
		{"unknown name", OutcomeLimitExceeded, &LimitHit{Name: "cpu", Value: 1, Command: "agent"}, "limit.name: must be"},
		{"no value", OutcomeLimitExceeded, &LimitHit{Name: LimitWorkspace, Command: "agent"}, "limit.value: must be positive"},
		{"no command", OutcomeLimitExceeded, &LimitHit{Name: LimitWorkspace, Value: 1}, "limit.command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := validEvidence()
			e.Outcome, e.Limit = tc.outcome, tc.limit
			err := e.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
