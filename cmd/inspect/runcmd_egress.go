package main

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/modelproxy"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/checkoutrun"
)

// runEgress wires the app's own proxies for `inspect run`'s one session:
// the model proxy, with the session's budget (agents.token_budget) kept in
// memory, and the registry egress over the server config's upstreams,
// without the server's artifact cache (egress.cache is one replica's; a
// second process would miscount its bound; decision 0022).
func runEgress(cfg config.Server, log zerolog.Logger) checkoutrun.Egress {
	models := modelproxy.New(modelproxy.Options{Providers: cfg, MaxRequestBytes: cfg.Agents.MaxRequestBytes,
		OutputReservation: cfg.Agents.OutputReservation, MaxInFlight: cfg.Agents.MaxRequestsInFlight})
	budget := modelproxy.NewBudget(cfg.Agents.TokenBudget, cfg.Agents.MaxRequestsInFlight)
	registries := registryproxy.New(registryproxy.Options{Upstreams: cfg})
	return checkoutrun.Egress{
		Model: func(w http.ResponseWriter, r *http.Request, spec contract.Spec) {
			models.Serve(w, r, spec, budget, log)
		},
		Registry: func(w http.ResponseWriter, r *http.Request, spec contract.Spec) {
			registries.Serve(w, r, spec.Registries, log)
		},
		Usage: func() *contract.TokenUsage {
			u := budget.Used()
			if u.Requests == 0 {
				return nil
			}
			return &contract.TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Requests: int(u.Requests),
				CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens}
		},
	}
}
