package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/sandbox"
)

// Services run in the session's environment (decision 0025): started
// before the agent (for_agent) or before verify, each after its setup in a
// cold session, and waited for until its ready check passes. One that
// exits while the session still runs, or is never ready, ends the session
// error, naming it, with the end of its output in the evidence.
//
// The agent's services are stopped (each sandbox killed whole, so every
// process they started, detached or not, with it) as soon as the agent
// ends, before the change is collected; verify gets fresh ones, for_agent
// ones included, in a fresh environment, on the verify workspace and on
// the caches as setup left them (phaseviews.go), a cold session running
// each service's setup again (decision 0057).

// ProbeBinary is where the inspect binary is bound for `inspect runner
// probe-tcp`, a service's TCP ready check.
const ProbeBinary = "/run/inspect-services/inspect"

// readyInterval is how often a ready.argv check is run again.
const readyInterval = 100 * time.Millisecond

// errServiceEnded is the cause a service's own exit cancels the run with.
type errServiceEnded struct{ name string }

func (e *errServiceEnded) Error() string { return "the service " + e.name + " exited" }

// service is one running service.
type service struct {
	spec   contract.Service
	index  int // in s.ev.Services
	out    *tailBuffer
	start  time.Time
	cancel context.CancelFunc
	// done is closed once its sandbox is gone; res and err are then its
	// end. stopped says the supervisor ended it.
	done    chan struct{}
	res     sandbox.Result
	err     error
	stopped bool
}

// startServices starts the spec's services for phase (agent: the
// for_agent ones; verify: all of them, fresh), in order, each ready before
// the next. false means the session ends (the outcome is set).
func (s *session) startServices(ctx context.Context, phase contract.Phase) bool {
	for _, sp := range s.spec.Services {
		if phase == contract.PhaseAgent && !sp.ForAgent {
			continue
		}
		if len(sp.Setup) > 0 && s.restored == nil {
			// Cold: the data a snapshot would bring is not there yet; for
			// verify not either, since verify's caches are setup's, never
			// what the agent's phase wrote (phaseviews.go).
			r, ok := s.command(ctx, contract.ServiceSetupName(sp.Name), sp.Setup, sp.SetupTimeout.Std())
			if !ok || s.cutShort(ctx) {
				return false
			}
			if !r.Succeeded() {
				// Recorded as the service's failure, so the reply names it
				// with the setup's output.
				why := "could not be set up: its setup " + r.Ending()
				s.ev.Services = append(s.ev.Services, contract.ServiceResult{Name: sp.Name, Phase: phase, Argv: sp.Argv,
					Failure: why, ExitCode: -1, OutputTail: r.OutputTail, OutputTruncated: r.OutputTruncated})
				s.ev.Outcome = contract.OutcomeError
				s.ev.Reason = "the service " + sp.Name + " " + why
				return false
			}
		}
		if !s.startService(ctx, phase, sp) {
			return false
		}
	}
	return true
}

// startService starts one service and waits until it is ready.
func (s *session) startService(ctx context.Context, phase contract.Phase, sp contract.Service) bool {
	svc := &service{spec: sp, index: len(s.ev.Services), out: newTailBuffer(s.spec.Limits.MaxOutputBytes), done: make(chan struct{})}
	s.ev.Services = append(s.ev.Services, contract.ServiceResult{Name: sp.Name, Phase: phase, Argv: sp.Argv})
	// The service outlives the command that started it, but not the run:
	// its own context ends with ctx or with stopServices.
	svcCtx, cancel := context.WithCancel(ctx)
	svc.cancel = cancel
	svc.start = time.Now()
	spec := s.serviceSpec(sp.Argv, svc.out)
	s.services = append(s.services, svc)
	s.servicesRunning.Add(1)
	go func() {
		defer s.servicesRunning.Done()
		defer close(svc.done)
		svc.res, svc.err = sandbox.Run(svcCtx, spec)
		if svcCtx.Err() == nil && s.stop != nil {
			// It ended by itself while the session still needed it.
			s.stop(&errServiceEnded{name: sp.Name})
		}
	}()
	s.log.Info().Str("service", sp.Name).Msg("service started")

	err := s.waitReady(ctx, svc)
	if err == nil {
		s.ev.Services[svc.index].Ready = true
		s.ev.Services[svc.index].ReadyMS = time.Since(svc.start).Milliseconds()
		s.log.Info().Str("service", sp.Name).Int64("ready_ms", s.ev.Services[svc.index].ReadyMS).Msg("service ready")
		return true
	}
	// The service exiting cancels ctx (its goroutine stops the run before
	// it closes done), so cutShort also covers one that died waiting.
	if s.cutShort(ctx) {
		return false
	}
	s.stopService(svc)
	why := fmt.Sprintf("was not ready within %v", sp.ReadyTimeout.Std())
	if !errors.Is(err, context.DeadlineExceeded) {
		why += ": " + s.red.Redact(err.Error())
	}
	s.failService(svc, why)
	return false
}

// waitReady runs svc's ready check until it passes, svc exits, ctx ends
// or the ready timeout passes.
func (s *session) waitReady(ctx context.Context, svc *service) error {
	rctx, cancel := context.WithTimeout(ctx, svc.spec.ReadyTimeout.Std())
	defer cancel()
	// The wait ends as soon as the service does.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		select {
		case <-svc.done:
			cancel()
		case <-watchDone:
		}
	}()
	if port := svc.spec.Ready.TCP; port != 0 {
		bin, err := s.probeBinary()
		if err != nil {
			return err
		}
		remaining := time.Until(deadlineOf(rctx))
		argv := []string{ProbeBinary, "runner", "probe-tcp", "--timeout", remaining.Round(time.Millisecond).String(), strconv.Itoa(port)}
		out := newTailBuffer(4 << 10)
		spec := s.serviceSpec(argv, out)
		spec.ExtraMounts = append(spec.ExtraMounts, sandbox.Mount{Source: bin, Target: ProbeBinary, ReadOnly: true, File: true})
		res, err := sandbox.Run(rctx, spec)
		switch {
		case err != nil:
			return err
		case res.ExitCode == 0 && res.Signal == "":
			return nil
		case rctx.Err() != nil:
			return rctx.Err()
		default:
			tail, _ := out.tail(s.red, 4<<10)
			return errors.New(cleanLine(tail))
		}
	}
	t := time.NewTicker(readyInterval)
	defer t.Stop()
	last := errors.New("the ready check never ran")
	for {
		out := newTailBuffer(4 << 10)
		res, err := sandbox.Run(rctx, s.serviceSpec(svc.spec.Ready.Argv, out))
		switch {
		case err != nil && res.Duration == 0:
			return err
		case res.ExitCode == 0 && res.Signal == "" && !res.Cancelled && !res.TimedOut:
			return nil
		case !res.Cancelled:
			tail, _ := out.tail(s.red, 1<<10)
			last = fmt.Errorf("the ready check %s: %s", contract.CommandResult{ExitCode: res.ExitCode, Signal: res.Signal}.Ending(), cleanLine(tail))
		}
		select {
		case <-rctx.Done():
			return last
		case <-t.C:
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(time.Minute)
	}
	return d
}

// serviceSpec is a sandbox spec for a service or its ready check, in the
// session's environment, with the session's root and caches but no
// egress: services reach nothing beyond the environment's loopback.
func (s *session) serviceSpec(argv []string, out *tailBuffer) sandbox.Spec {
	return sandbox.Spec{
		Workspace:   s.phaseWorkspace(),
		RootFS:      s.rootFS,
		ExtraMounts: append([]sandbox.Mount(nil), s.mounts...),
		Argv:        argv,
		Env:         sandboxEnv(s.cfg.SandboxPath, withImageEnv(s.imageEnv, s.spec.Env), "INSPECT_SESSION_ID="+s.spec.SessionID),
		UID:         s.cfg.SandboxUID,
		GID:         s.cfg.SandboxGID,
		Limits:      s.cfg.Limits,
		Budget:      s.budget,
		Within:      s.env,
		Stdout:      out,
		Stderr:      out,
	}
}

// probeBinary copies the inspect binary into the attempt's directory once,
// for probe-tcp (the sandbox uid may not reach where it was installed).
func (s *session) probeBinary() (string, error) {
	if s.probeBin != "" {
		return s.probeBin, nil
	}
	src := s.cfg.ForwarderBinary
	if src == "" {
		var err error
		if src, err = os.Executable(); err != nil {
			return "", fmt.Errorf("finding the inspect binary for probe-tcp: %w", err)
		}
	}
	dir := filepath.Join(s.ws.dir, "services")
	if err := os.Mkdir(dir, 0o711); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o711); err != nil { // past the umask
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	err = copyFileIn(root, src, "inspect", 0o755)
	_ = root.Close() // nothing written through it after the copy
	if err != nil {
		return "", fmt.Errorf("copying inspect for probe-tcp: %w", err)
	}
	s.probeBin = filepath.Join(dir, "inspect")
	return s.probeBin, nil
}

// serviceCause is the service whose exit cancelled ctx, or nil.
func (s *session) serviceCause(ctx context.Context) *service {
	var ended *errServiceEnded
	if !errors.As(context.Cause(ctx), &ended) {
		return nil
	}
	// The running ones first: a for_agent service's name is also its
	// stopped agent-phase run's, which may have exited by itself just as
	// the agent ended, before it was stopped.
	for _, svc := range append(slices.Clone(s.services), s.stoppedServices...) {
		if svc.spec.Name == ended.name {
			return svc
		}
	}
	return nil
}

// serviceEnded records, for cutShort, that svc's own exit ended the
// session: outcome error, naming it.
func (s *session) serviceEnded(svc *service) {
	<-svc.done // it has exited (it cancelled the run first): this returns at once
	how := contract.CommandResult{ExitCode: svc.res.ExitCode, Signal: svc.res.Signal}.Ending()
	if svc.err != nil && svc.res.Duration == 0 {
		how = "its sandbox could not start: " + s.red.Redact(svc.err.Error())
	}
	if l := svc.res.Limit; l != nil {
		// The reply (render.ServiceFailedReply) shows this: the limit and
		// its value.
		how = "stopped: it ran into " + l.Owned()
	}
	if !s.ev.Services[svc.index].Ready {
		s.failService(svc, "exited before it was ready ("+how+")")
		return
	}
	s.failService(svc, "exited while the session still needed it ("+how+")")
}

// failService ends the session error because of svc.
func (s *session) failService(svc *service, why string) {
	s.ev.Services[svc.index].Failure = cleanText(why, contract.MaxReasonBytes)
	s.ev.Outcome = contract.OutcomeError
	s.ev.Reason = "the service " + svc.spec.Name + " " + why
}

// stopService kills svc's sandbox (if it still runs) and waits for it.
func (s *session) stopService(svc *service) {
	select {
	case <-svc.done:
	default:
		svc.stopped = true
		svc.cancel()
		<-svc.done
	}
	svc.cancel() // releases the context of one that ended by itself
}

// stopServices stops every service, last started first, and records how
// each ended. Nothing of theirs is left running afterwards: each
// sandbox.Run returned only once its init had exited.
func (s *session) stopServices() {
	for i := len(s.services) - 1; i >= 0; i-- {
		s.stopService(s.services[i])
	}
	s.servicesRunning.Wait()
	for _, svc := range s.services {
		r := &s.ev.Services[svc.index]
		r.ExitCode, r.Signal = svc.res.ExitCode, svc.res.Signal
		if svc.stopped || svc.res.Cancelled {
			r.ExitCode, r.Signal = -1, "SIGKILL"
		}
		if r.Signal != "" && !validSignalName(r.Signal) {
			r.Signal = ""
		}
		r.OutputTail, r.OutputTruncated = svc.out.tail(s.red, s.spec.Limits.MaxOutputBytes)
		if svc.err != nil {
			s.log.Warn().Str("error", s.red.Redact(svc.err.Error())).Str("service", svc.spec.Name).Msg("service sandbox reported an error")
		}
	}
	s.stoppedServices = append(s.stoppedServices, s.services...)
	s.services = nil
}

func validSignalName(sig string) bool {
	return len(sig) > 3 && sig[:3] == "SIG"
}

// withoutServiceSetup is a snapshot's setup without the services' own
// steps: in a session those run just before their service, and only cold
// (a restored snapshot has their data already, even when its other caches
// are stale).
func (s *session) withoutServiceSetup(cmds []contract.Command) []contract.Command {
	names := map[string]bool{}
	for _, sp := range s.spec.Services {
		if len(sp.Setup) > 0 {
			names[contract.ServiceSetupName(sp.Name)] = true
		}
	}
	var out []contract.Command
	for _, c := range cmds {
		if !names[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// openEnvironment starts the session's environment. A supervisor that
// cannot make one (it is not root) runs each command with namespaces of
// its own, unless the spec has services, which need one.
func (s *session) openEnvironment(ctx context.Context) bool {
	env, err := sandbox.StartEnvironment(ctx, s.cfg.SandboxUID, s.cfg.SandboxGID)
	if err != nil {
		if len(s.spec.Services) > 0 {
			return s.fail(ctx, "starting the session's environment for its services", err)
		}
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("no shared session environment; each command gets namespaces of its own")
		return true
	}
	s.env = env
	return true
}

// closeEnvironment ends the session's environment, once its services are
// stopped.
func (s *session) closeEnvironment() {
	if s.env == nil {
		return
	}
	if err := s.env.Close(); err != nil {
		s.log.Warn().Str("error", s.red.Redact(err.Error())).Msg("closing the session's environment")
	}
	s.env = nil
}
