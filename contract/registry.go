package contract

import (
	"slices"
	"strings"

	"github.com/inspecthq/inspect/policy"
)

// Registry is a package registry a session may reach through the egress
// proxy (decision 0018), by its server-side name: never its URL or its
// credential, which stay with the app. The supervisor points the package
// managers of the phases listed at the forwarder, under the name, and
// relays only GET and HEAD requests during those phases.
type Registry struct {
	// Name is the server's name for the upstream (egress.registries),
	// with the rules of a provider's name.
	Name string `json:"name"`
	// Kind is the protocol: policy.RegistryGoProxy, RegistryNPM or
	// RegistryPyPI.
	Kind string `json:"kind"`
	// Phases are the phases that may use it: setup, verify, agent.
	Phases []Phase `json:"phases"`
	// SumDB is the Go checksum database as GOSUMDB names it without a URL
	// ("<name>+<key id>+<key>"), so that go reaches it only through the
	// proxy (goproxy only; required there).
	SumDB string `json:"sumdb,omitempty"`
	// NoSumDB are module path patterns not checked against SumDB
	// (GONOSUMDB: private modules), fetched through the proxy all the same.
	NoSumDB []string `json:"no_sumdb,omitempty"`
}

// RegistryPhases are the phases a registry may be open to.
var RegistryPhases = []Phase{PhaseSetup, PhaseAgent, PhaseVerify}

// MaxRegistries caps a spec's registries.
const MaxRegistries = 16

// Serves reports whether the registry is open to phase.
func (r Registry) Serves(phase Phase) bool { return slices.Contains(r.Phases, phase) }

// ValidateRegistries checks registries as a spec would carry them (the
// server's config checks its own with it).
func ValidateRegistries(rs []Registry) error {
	var f faults
	validateRegistries(&f, "registries", rs)
	return f.err("registries")
}

func validateRegistries(f *faults, prefix string, rs []Registry) {
	if len(rs) > MaxRegistries {
		f.add(prefix, "has %d registries, more than the %d allowed", len(rs), MaxRegistries)
	}
	seen := map[string]bool{}
	for i, r := range rs {
		p := index(prefix, i)
		if err := ValidProviderName(r.Name); err != nil {
			f.add(at(p, "name"), "%v", err)
		} else if seen[r.Name] {
			f.add(at(p, "name"), "%q is listed twice", r.Name)
		}
		seen[r.Name] = true
		if !slices.Contains(policy.RegistryKinds(), r.Kind) {
			f.add(at(p, "kind"), "must be one of %s, not %s", strings.Join(policy.RegistryKinds(), ", "), safeQuote(r.Kind))
		}
		if len(r.Phases) == 0 {
			f.add(at(p, "phases"), "must name at least one phase")
		}
		for j, ph := range r.Phases {
			if !slices.Contains(RegistryPhases, ph) {
				f.add(index(at(p, "phases"), j), "must be setup, agent or verify, not %s", safeQuote(string(ph)))
			}
		}
		switch {
		case r.Kind == policy.RegistryGoProxy && !validSumDB(r.SumDB):
			f.add(at(p, "sumdb"), "must be a checksum database's verifier key, <name>+<hex id>+<base64 key>")
		case r.Kind != policy.RegistryGoProxy && (r.SumDB != "" || len(r.NoSumDB) > 0):
			f.add(at(p, "sumdb"), "is for goproxy registries only")
		}
		for j, pat := range r.NoSumDB {
			if pat == "" || strings.ContainsAny(pat, ", \t\n") || strings.ContainsFunc(pat, policy.IsHiddenInLine) {
				f.add(index(at(p, "no_sumdb"), j), "must be one module path pattern")
			}
		}
	}
}

// validSumDB checks the shape of a verifier key, name+hash+key (see
// golang.org/x/mod/sumdb/note): a host-like name, 8 hex digits, base64.
func validSumDB(s string) bool {
	parts := strings.SplitN(s, "+", 3)
	if len(parts) != 3 || parts[0] == "" || len(parts[1]) != 8 || parts[2] == "" {
		return false
	}
	for _, c := range parts[0] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	if strings.Trim(parts[1], "0123456789abcdef") != "" {
		return false
	}
	for _, c := range parts[2] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}
