package supervisor

import (
	"context"

	"github.com/inspecthq/inspect/runner/sandbox"
)

// openBudget makes the session's parent cgroup (decision 0058): every
// command and service of the attempt runs inside it, so together they
// stay within the session's memory and pids, whatever number of
// services the repo starts.
func (s *session) openBudget(ctx context.Context) bool {
	if s.cfg.Limits.SessionMemoryBytes == 0 && s.cfg.Limits.SessionPids == 0 {
		return true
	}
	b, err := sandbox.NewBudget(s.cfg.Limits)
	if err != nil {
		return s.fail(ctx, "making the session's cgroup", err)
	}
	s.budget = b
	return true
}

// closeBudget removes the session's cgroup once every command and
// service of the attempt has ended.
func (s *session) closeBudget() {
	if s.budget == nil {
		return
	}
	if err := s.budget.Close(); err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("removing the session's cgroup")
	}
	s.budget = nil
}
