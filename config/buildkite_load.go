package config

import (
	"fmt"
	"time"
)

// LoadBuildkiteSetup reads a server config as Load does (the same keys,
// strictly, then the INSPECT_* overrides from env) for `inspect buildkite
// setup`, which talks only to Buildkite's REST API about the two
// pipelines. Only what it uses is validated: the buildkite.* keys but the
// webhook's token, and sessions.timeout (the step's timeout). So setup
// runs before the GitHub App exists, or on a machine without its key.
// buildkite.cluster_id is needed only to create a pipeline, and Setup
// says so then. path may be empty (env alone).
func LoadBuildkiteSetup(path string, env func(string) (string, bool)) (Server, error) {
	cfg, err := readServer(path, env, "reading config")
	if err != nil {
		return Server{}, err
	}
	var faults []string
	add := func(key, format string, args ...any) {
		faults = append(faults, key+": "+fmt.Sprintf(format, args...))
	}
	cfg.Buildkite.validateAPI(add)
	if cfg.Sessions.Timeout < time.Minute {
		add("sessions.timeout", "must be at least 1m")
	}
	if len(faults) > 0 {
		sortStrings(faults)
		return Server{}, &ValidationError{Faults: faults}
	}
	return cfg, nil
}
