package contract

import (
	"regexp"
	"time"
)

// Service is a long-running process of the repository's (a database, a
// queue) that the supervisor starts in the session's environment, so the
// agent's and verify's commands reach it on loopback (decision 0025). It
// runs in the sandbox like any command, with no egress.
type Service struct {
	// Name labels the service in the evidence and in replies: lowercase
	// letters, digits and - _ . (ServiceNameRE), unique in the spec.
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	// Ready says when the service is up; ReadyTimeout bounds the wait
	// from its start.
	Ready        ServiceReady `json:"ready"`
	ReadyTimeout Duration     `json:"ready_timeout"`
	// Setup, when set, prepares the service's data (initdb, say) into a
	// cache: a snapshot build runs it (as a snapshot setup step), and a
	// session runs it just before the service starts, unless the session
	// was restored from a snapshot, which has it done.
	Setup        []string `json:"setup,omitempty"`
	SetupTimeout Duration `json:"setup_timeout,omitempty"`
	// ForAgent starts the service before the agent too (stopped when the
	// agent ends; verify starts it afresh); otherwise it starts before
	// verify only.
	ForAgent bool `json:"for_agent,omitempty"`
}

// ServiceReady is a readiness check: exactly one of Argv (run in the
// session's environment until it exits 0) or TCP (a port on the
// environment's 127.0.0.1 that accepts a connection).
type ServiceReady struct {
	Argv []string `json:"argv,omitempty"`
	TCP  int      `json:"tcp,omitempty"`
}

// Caps on a spec's services.
const (
	MaxServices = 8
	// MaxReadyTimeout caps one service's ready_timeout.
	MaxReadyTimeout = 10 * time.Minute
)

// ServiceNameRE is what a service's name may be: it is shown in replies,
// so it is plain.
var ServiceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ServiceSetupName is the name a service's setup step has among the
// commands of the evidence and of a snapshot build.
func ServiceSetupName(service string) string { return "service " + service + " setup" }

func validateServices(f *faults, prefix string, svcs []Service) {
	if len(svcs) > MaxServices {
		f.add(prefix, "has %d services, more than the %d allowed", len(svcs), MaxServices)
	}
	seen := map[string]bool{}
	for i, s := range svcs {
		p := index(prefix, i)
		if !ServiceNameRE.MatchString(s.Name) {
			f.add(at(p, "name"), "must be 1 to 63 lowercase letters, digits and - _ ., starting with a letter or digit")
		} else if seen[s.Name] {
			f.add(at(p, "name"), "%s is used by an earlier service", safeQuote(s.Name))
		}
		seen[s.Name] = true
		checkArgv(f, at(p, "argv"), s.Argv)
		switch r := s.Ready; {
		case len(r.Argv) > 0 && r.TCP != 0:
			f.add(at(p, "ready"), "must be either argv or tcp, not both")
		case len(r.Argv) > 0:
			checkArgv(f, at(at(p, "ready"), "argv"), r.Argv)
		case r.TCP < 1 || r.TCP > 65535:
			f.add(at(at(p, "ready"), "tcp"), "must be a port from 1 to 65535 (or give ready.argv)")
		}
		if s.ReadyTimeout <= 0 || s.ReadyTimeout.Std() > MaxReadyTimeout {
			f.add(at(p, "ready_timeout"), "must be a positive duration of at most %v", MaxReadyTimeout)
		}
		if len(s.Setup) > 0 {
			checkArgv(f, at(p, "setup"), s.Setup)
			if s.SetupTimeout <= 0 {
				f.add(at(p, "setup_timeout"), "must be a positive duration with a setup")
			}
		} else if s.SetupTimeout != 0 {
			f.add(at(p, "setup_timeout"), "is only for a service with a setup")
		}
	}
}

// ServiceResult is one service's run in the evidence (v6).
type ServiceResult struct {
	Name string `json:"name"`
	// Phase is the phase it was started before: agent or verify. A
	// for_agent service has one of each: the agent's is stopped before the
	// change is collected, and verify gets a fresh one (decision 0057).
	Phase Phase    `json:"phase"`
	Argv  []string `json:"argv"`
	// Ready is set once its check passed; ReadyMS is how long from its
	// start that took.
	Ready   bool  `json:"ready,omitempty"`
	ReadyMS int64 `json:"ready_ms,omitempty"`
	// Failure says why the service ended the session (it exited before
	// the session was done, or never became ready); empty when it ran
	// until the supervisor stopped it.
	Failure string `json:"failure,omitempty"`
	// ExitCode and Signal are how it ended: on its own (with Failure), or
	// killed by the supervisor at the session's end (-1, SIGKILL).
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// OutputTail is the end of its combined output, as for a command.
	OutputTail      string `json:"output_tail"`
	OutputTruncated bool   `json:"output_truncated,omitempty"`
}

func validateServiceResults(f *faults, prefix string, rs []ServiceResult) {
	// A for_agent service runs twice: for the agent, then fresh for
	// verify (decision 0057).
	if len(rs) > 2*MaxServices {
		f.add(prefix, "has %d service runs, more than the %d allowed", len(rs), 2*MaxServices)
	}
	for i, r := range rs {
		p := index(prefix, i)
		if !ServiceNameRE.MatchString(r.Name) {
			f.add(at(p, "name"), "is not a service name")
		}
		if r.Phase != PhaseAgent && r.Phase != PhaseVerify {
			f.add(at(p, "phase"), "must be agent or verify, not %s", safeQuote(string(r.Phase)))
		}
		checkArgv(f, at(p, "argv"), r.Argv)
		if r.ReadyMS < 0 {
			f.add(at(p, "ready_ms"), "must not be negative")
		}
		checkLine(f, at(p, "failure"), r.Failure, MaxReasonBytes, false)
		if r.ExitCode < -1 || r.ExitCode > 255 {
			f.add(at(p, "exit_code"), "must be between -1 and 255")
		}
		if r.Signal != "" && !validSignal(r.Signal) {
			f.add(at(p, "signal"), `must be a signal name such as "SIGKILL"`)
		}
		checkText(f, at(p, "output_tail"), r.OutputTail, HardMaxOutputBytes, false)
	}
}

// FailedService is the service that ended the session, or nil.
func (e *Evidence) FailedService() *ServiceResult {
	for i := range e.Services {
		if e.Services[i].Failure != "" {
			return &e.Services[i]
		}
	}
	return nil
}
