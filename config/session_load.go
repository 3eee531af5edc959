package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// LoadSessionKeys reads a server config file as Load does (the same keys,
// strictly, then the INSPECT_* overrides from env) for `inspect run`,
// which runs one session on this host and uses only what shapes a
// session: sessions.*, agents.* and egress.*. Only those are validated, so
// a file that holds just the model providers and registries will do, and
// so will the server's own. path is required.
func LoadSessionKeys(path string, env func(string) (string, bool)) (Server, error) {
	if path == "" {
		return Server{}, errors.New("reading the server config: no file named")
	}
	cfg, err := readServer(path, env, "reading the server config")
	if err != nil {
		return Server{}, err
	}
	var faults []string
	cfg.validateSessionKeys(func(key, format string, args ...any) {
		faults = append(faults, key+": "+fmt.Sprintf(format, args...))
	})
	if len(faults) > 0 {
		sortStrings(faults)
		return Server{}, &ValidationError{Faults: faults}
	}
	return cfg, nil
}

// validateSessionKeys checks the keys that shape a session (sessions.*,
// agents.*, egress.*): all of Validate that `inspect run` needs.
func (c Server) validateSessionKeys(add func(key, format string, args ...any)) {
	if c.Sessions.Timeout < time.Minute {
		add("sessions.timeout", "must be at least 1m")
	}
	if c.Sessions.CommandTimeout <= 0 || c.Sessions.CommandTimeout > c.Sessions.Timeout {
		add("sessions.command_timeout", "must be positive and at most sessions.timeout")
	}
	if c.Sessions.MaxChangedFiles < 1 || c.Sessions.MaxChangedFiles > 10000 {
		add("sessions.max_changed_files", "must be between 1 and 10000")
	}
	if c.Sessions.MaxChangeBytes < 1<<10 || c.Sessions.MaxChangeBytes > contract.HardMaxChangeBytes {
		add("sessions.max_change_bytes", "must be between 1 KiB and %d MiB (the session contract's cap)", contract.HardMaxChangeBytes>>20)
	}
	c.Agents.validate(add)
	c.Egress.validate(add)
}
