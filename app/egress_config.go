package app

import "github.com/inspecthq/inspect/runner/contract"

// upstreamFor is the provider the session's agent may reach under name,
// from the server's config; ok is false for any other name.
func (s *Service) upstreamFor(spec contract.Spec, name string) (modelUpstream, bool, error) {
	return modelUpstream{}, false, nil // until the agents config lands (issue 7)
}

// tokenBudget is the server's per-session token budget (0: none).
func (s *Service) tokenBudget() int64 { return 0 }
