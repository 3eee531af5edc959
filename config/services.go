package config

import (
	"fmt"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// DefaultReadyTimeout is a service's ready_timeout when it sets none.
const DefaultReadyTimeout = 60 * time.Second

// RepoService is one of the repo's `services:`: a long-running process
// (a database, say) started in the session's environment before verify,
// and before the agent with for_agent, and stopped with its phase
// (decision 0057). There
// are no presets: the repository says how to run its own service.
type RepoService struct {
	// Name labels it in the evidence and replies (contract.ServiceNameRE).
	Name string `yaml:"name"`
	// Run is its argv.
	Run []string `yaml:"run"`
	// Ready says when it is up: run (an argv that exits 0) or tcp (a port
	// on the session's 127.0.0.1 that accepts a connection).
	Ready RepoServiceReady `yaml:"ready"`
	// ReadyTimeout bounds the wait for Ready (DefaultReadyTimeout).
	ReadyTimeout time.Duration `yaml:"ready_timeout"`
	// Setup (an argv) prepares the service's data into a cache: snapshot
	// builds run it after snapshot.setup, and a cold session just before
	// the service starts.
	Setup []string `yaml:"setup"`
	// ForAgent starts it before the agent too.
	ForAgent bool `yaml:"for_agent"`
}

// RepoServiceReady is a readiness check: exactly one of Run and TCP.
type RepoServiceReady struct {
	Run []string `yaml:"run"`
	TCP int      `yaml:"tcp"`
}

func validateServices(svcs []RepoService, add func(key, format string, args ...any)) {
	if len(svcs) > contract.MaxServices {
		add("services", "has %d services; at most %d", len(svcs), contract.MaxServices)
	}
	seen := map[string]bool{}
	for i, s := range svcs {
		key := func(k string) string { return fmt.Sprintf("services[%d].%s", i, k) }
		switch {
		case !contract.ServiceNameRE.MatchString(s.Name):
			add(key("name"), "must be 1 to 63 lowercase letters, digits and - _ ., starting with a letter or digit")
		case seen[s.Name]:
			add(key("name"), "%q names an earlier service too", s.Name)
		}
		seen[s.Name] = true
		if len(s.Run) == 0 || s.Run[0] == "" {
			add(key("run"), "must be a non-empty argv list")
		}
		switch r := s.Ready; {
		case len(r.Run) > 0 && r.TCP != 0:
			add(key("ready"), "must be either run or tcp, not both")
		case len(r.Run) > 0:
			if r.Run[0] == "" {
				add(key("ready.run[0]"), "the program must not be empty")
			}
		case r.TCP == 0:
			add(key("ready"), "is required: run (an argv that exits 0 once the service is up) or tcp (its port on 127.0.0.1)")
		case r.TCP < 1 || r.TCP > 65535:
			add(key("ready.tcp"), "must be a port from 1 to 65535")
		}
		if s.ReadyTimeout < 0 || s.ReadyTimeout > contract.MaxReadyTimeout {
			add(key("ready_timeout"), "must be at most %v (0 means %v)", contract.MaxReadyTimeout, DefaultReadyTimeout)
		}
		if len(s.Setup) > 0 && s.Setup[0] == "" {
			add(key("setup[0]"), "the program must not be empty")
		}
	}
}

// ServiceSpecs maps the repo's services to the spec's: setup steps time
// out after setupTimeout, and nothing waits longer than max.
func (r Repo) ServiceSpecs(setupTimeout, max time.Duration) []contract.Service {
	var out []contract.Service
	for _, s := range r.Services {
		ready := s.ReadyTimeout
		if ready <= 0 {
			ready = DefaultReadyTimeout
		}
		svc := contract.Service{
			Name:         s.Name,
			Argv:         s.Run,
			Ready:        contract.ServiceReady{Argv: s.Ready.Run, TCP: s.Ready.TCP},
			ReadyTimeout: contract.Duration(min(ready, max)),
			ForAgent:     s.ForAgent,
		}
		if len(s.Setup) > 0 {
			svc.Setup, svc.SetupTimeout = s.Setup, contract.Duration(min(setupTimeout, max))
		}
		out = append(out, svc)
	}
	return out
}

// serviceSetupCommands are the services' setup steps as snapshot setup
// steps (contract.ServiceSetupName), run by a snapshot build after the
// repo's own.
func (r Repo) serviceSetupCommands(def, max time.Duration) []contract.Command {
	var out []contract.Command
	for _, s := range r.ServiceSpecs(def, max) {
		if len(s.Setup) > 0 {
			out = append(out, contract.Command{Name: contract.ServiceSetupName(s.Name), Argv: s.Setup, Timeout: s.SetupTimeout})
		}
	}
	return out
}
