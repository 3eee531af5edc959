package app

import "github.com/inspecthq/inspect/runner/contract"

// upstreamFor is the provider the session's agent may reach under name:
// the one its spec names, as the server configures it (agents.providers).
// ok is false for any other name, or a provider the server no longer has.
func (s *Service) upstreamFor(spec contract.Spec, name string) (modelUpstream, bool, error) {
	if spec.Agent.Provider == "" || spec.Agent.Provider != name {
		return modelUpstream{}, false, nil
	}
	p, ok := s.cfg.Provider(name)
	if !ok {
		return modelUpstream{}, false, nil
	}
	key, err := p.APIKey()
	if err != nil {
		return modelUpstream{}, false, err
	}
	return modelUpstream{BaseURL: p.BaseURL, Kind: p.Kind, Key: key}, true, nil
}

// tokenBudget is the server's per-session token budget (0: none).
func (s *Service) tokenBudget() int64 { return s.cfg.Agents.TokenBudget }
