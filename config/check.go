package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Check is Load for `inspect serve --check-config`: it reads the file and
// the INSPECT_* overrides and reports every fault at once, each once, by the
// YAML path the operator wrote (or, for a key an environment variable set,
// by that variable): the YAML's type errors, the overrides that do not
// parse, the validation faults and the files the config names (missing,
// unreadable, empty, or a key that is not a key). cfg is usable only when
// err is nil; a file that cannot be read or parsed as YAML at all is the
// one fault.
//
// The warnings are what is allowed but likely not meant, whether or not
// there are faults.
func Check(path string, env func(string) (string, bool), probes Probes) (cfg Server, warnings []string, err error) {
	cfg, err = load(path, env, &probes)
	if len(cfg.Agents.Models) == 0 {
		warnings = append(warnings, "agents.models: none is offered, so only `command` agents can run (no agent preset has a model)")
	}
	if err != nil {
		return Server{}, warnings, err
	}
	return cfg, warnings, nil
}

// Probes are what Check asks of the host, passed in so a test can say
// what the host has.
type Probes struct {
	// LookPath (exec.LookPath) finds the executor's tools: the local
	// executor runs every sandbox under bwrap, so a host without it would
	// fail every session, not start-up.
	LookPath func(file string) (string, error)
	// CheckPrivateKey (ghclient.CheckPrivateKey) parses the App's key.
	CheckPrivateKey func(pem []byte) error
	// CheckProvenanceKeys (provenance.LoadKeyring) parses the provenance
	// keys, once their files are readable.
	CheckProvenanceKeys func(p Provenance) error
}

// load is Load and Check: probes (Check's) add the files' faults, the App
// key's and the executor's tools'. On faults, the config is returned as
// far as it was read, for Check's warnings.
func load(path string, env func(string) (string, bool), probes *Probes) (Server, error) {
	if env == nil {
		env = os.LookupEnv
	}
	cfg := Defaults()
	var faults []string
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Server{}, fmt.Errorf("reading config: %w", err)
		}
		typeFaults, err := decodeCollecting(data, &cfg)
		if err != nil {
			return Server{}, fmt.Errorf("%s: %w", path, err)
		}
		faults = append(faults, typeFaults...)
	}
	var envErr *ValidationError
	if err := applyEnv(&cfg, env); errors.As(err, &envErr) {
		faults = append(faults, envErr.Faults...)
	}
	secretErr := cfg.readWebhookSecret()
	if secretErr != nil {
		faults = append(faults, secretErr.Error())
	}
	if err := cfg.ResolveStatePaths(); err != nil {
		faults = append(faults, err.Error())
	}
	cfg.deriveGitHubAPIURL()
	var valid *ValidationError
	if err := cfg.Validate(); errors.As(err, &valid) {
		for _, f := range valid.Faults {
			if secretErr != nil && strings.HasPrefix(f, "github.webhook_secret:") {
				continue // the secret is empty because its file failed, said above
			}
			faults = append(faults, f)
		}
	}
	if probes != nil {
		if cfg.Executor.Kind == "local" && probes.LookPath != nil {
			if _, err := probes.LookPath("bwrap"); err != nil {
				faults = append(faults, "executor.kind: local runs each sandbox under bwrap (bubblewrap), which is not on PATH: install it (Debian: apt-get install bubblewrap)")
			}
		}
		files := cfg.fileFaults()
		faults = append(faults, files...)
		// Neither set is Validate's fault already.
		keySet := cfg.GitHub.PrivateKey != "" || cfg.GitHub.PrivateKeyPath != ""
		if keySet && !hasKey(files, "github.private_key_path") {
			key, err := cfg.PrivateKeyPEM()
			if err == nil && probes.CheckPrivateKey != nil {
				err = probes.CheckPrivateKey(key)
				if err != nil && cfg.GitHub.PrivateKey == "" {
					// The operator wrote the path, not the key.
					err = errors.New("github.private_key_path: " + strings.TrimPrefix(err.Error(), "github.private_key: "))
				}
			}
			if err != nil {
				faults = append(faults, err.Error())
			}
		}
		if cfg.ProvenanceEnabled() && !slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, "provenance.keys[") }) && probes.CheckProvenanceKeys != nil {
			if err := probes.CheckProvenanceKeys(cfg.Provenance); err != nil {
				faults = append(faults, err.Error())
			}
		}
	}
	if len(faults) == 0 {
		return cfg, nil
	}
	return cfg, &ValidationError{Faults: nameOverrides(faults, env)}
}

// hasKey reports whether a fault in faults is about key.
func hasKey(faults []string, key string) bool {
	for _, f := range faults {
		if strings.HasPrefix(f, key+":") {
			return true
		}
	}
	return false
}

// nameOverrides names a fault about a key an INSPECT_* variable set by the
// variable too ("executor.kind: ... (set by INSPECT_EXECUTOR_KIND)"): the
// operator looks for it in the environment, not in the file. (An override
// that does not parse is named by its variable first already.) It drops repeats and
// sorts, so a run's list is the same list each time.
func nameOverrides(faults []string, env func(string) (string, bool)) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range faults {
		for _, ev := range EnvVars() {
			if _, set := env(ev.Name); set && (strings.HasPrefix(f, ev.Key+":") || strings.HasPrefix(f, ev.Key+"[")) {
				f += " (set by " + ev.Name + ")"
				break
			}
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// decodeCollecting is decodeStrict that goes on past values of the wrong
// type (yaml.v3 decodes the rest and returns a *yaml.TypeError listing each
// by line) and names each by its YAML path instead of its line.
func decodeCollecting(data []byte, out any) ([]string, error) {
	err := decodeStrict(data, out)
	if err == nil {
		return nil, nil
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return nil, err // not YAML at all: the one fault
	}
	paths := map[int]string{}
	valuePaths(&root, "", paths)
	var faults []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var n int
		if _, scanErr := fmt.Sscanf(line, "line %d:", &n); scanErr == nil && paths[n] != "" {
			_, rest, _ := strings.Cut(line, ": ")
			line = paths[n] + ": " + rest
		}
		faults = append(faults, line)
	}
	return faults, nil
}

// valuePaths records, for each line that holds a key, a value or an item,
// the dotted path of the deepest one there (agents.models[0].provider): a
// child is visited after its parent and overwrites it.
func valuePaths(n *yaml.Node, prefix string, paths map[int]string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			valuePaths(c, prefix, paths)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if prefix != "" {
				key = prefix + "." + key
			}
			paths[n.Content[i].Line] = key
			paths[n.Content[i+1].Line] = key
			valuePaths(n.Content[i+1], key, paths)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			key := fmt.Sprintf("%s[%d]", prefix, i)
			paths[c.Line] = key
			valuePaths(c, key, paths)
		}
	}
}
