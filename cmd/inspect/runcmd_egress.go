package main

import (
	"flag"
	"net/http"
	"os"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/modelproxy"
	"github.com/inspecthq/inspect/app/registryproxy"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/checkoutrun"
)

// serverConfigFlag is --server-config, as `inspect run` and `inspect
// snapshot build` both take it: a server config file with `inspect serve`'s
// keys, of which the session keys are read (config.LoadSessionKeys), and
// whose egress the command serves for its one attempt (localEgress).
type serverConfigFlag struct{ path string }

func (f *serverConfigFlag) register(fs *flag.FlagSet, usage string) {
	fs.StringVar(&f.path, "server-config", "", usage)
}

// load reads the file; nil without the flag, which is config.Defaults():
// no model and no registry.
func (f *serverConfigFlag) load() (*config.Server, error) {
	if f.path == "" {
		return nil, nil
	}
	cfg, err := config.LoadSessionKeys(f.path, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	return &cfg, nil
}

// localEgress wires the app's own proxies for one local attempt, a
// session of `inspect run` or a build of `inspect snapshot build`, under
// cfg (config.Defaults() when nil): the model proxy, with the session's
// budget (agents.token_budget) kept in memory, and the registry egress
// over the server config's upstreams, without the server's artifact cache
// (egress.cache is one replica's; a second process would miscount its
// bound; decision 0022).
func localEgress(cfg *config.Server, log zerolog.Logger) checkoutrun.Egress {
	server := config.Defaults()
	if cfg != nil {
		server = *cfg
	}
	models := modelproxy.New(modelproxy.Options{Providers: server, MaxRequestBytes: server.Agents.MaxRequestBytes,
		OutputReservation: server.Agents.OutputReservation, MaxInFlight: server.Agents.MaxRequestsInFlight})
	budget := modelproxy.NewBudget(server.Agents.TokenBudget, server.Agents.MaxRequestsInFlight)
	registries := registryproxy.New(registryproxy.Options{Upstreams: server,
		MaxInFlightPerAttempt: server.Egress.MaxRegistryRequestsPerAttempt, MaxInFlight: server.Egress.MaxRegistryRequests})
	return checkoutrun.Egress{
		Model: func(w http.ResponseWriter, r *http.Request, spec contract.Spec) {
			models.Serve(w, r, spec, budget, log)
		},
		Registry: func(w http.ResponseWriter, r *http.Request, spec contract.Spec) {
			registries.Serve(w, r, spec.AttemptID, spec.Registries, log)
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
