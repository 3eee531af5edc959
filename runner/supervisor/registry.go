package supervisor

import (
	"maps"
	"slices"
	"strings"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// RegistryBaseURL is where a package manager inside the sandbox reaches the
// named package registry (decision 0018): the forwarder on loopback, under
// the server's name for it, as the app points metadata links back at it.
// The upstream's URL and credential live server-side only.
func RegistryBaseURL(name string) string { return contract.RegistryBaseURL(name) }

// openRegistries are the registries of regs open to phase, in their order.
func openRegistries(regs []contract.Registry, phase contract.Phase) []contract.Registry {
	var open []contract.Registry
	for _, r := range regs {
		if r.Serves(phase) {
			open = append(open, r)
		}
	}
	return open
}

// findRegistry is the registry of regs named name.
func findRegistry(regs []contract.Registry, name string) (contract.Registry, bool) {
	for _, r := range regs {
		if r.Name == name {
			return r, true
		}
	}
	return contract.Registry{}, false
}

// registryEnv is the environment that points the package managers of phase
// at the registries, through the forwarder, in every phase: a registry
// closed to phase is pointed at all the same, so that the egress refuses
// its requests with a 403 that says which phases it is open to, and records
// them in the evidence's egress audit (and so on the PR), where the public
// default would fail on DNS with nothing recorded. It is set after the
// repo's env (and the same names in another case are dropped from that, see
// withoutRegistryNames), so a repository cannot point them elsewhere or
// around the proxy: the sandbox has no other way out, and this keeps each
// tool's error an honest refusal rather than an unreachable host.
//
// Each kind is pointed at the first registry of the kind in the spec that
// is open to phase, or, with none open, at the first of the kind; the
// others are reachable at their own RegistryBaseURL by a repo's explicit
// configuration (an npm scope's registry, say).
func registryEnv(regs []contract.Registry, phase contract.Phase) map[string]string {
	env := map[string]string{}
	pointed := map[string]bool{}
	for _, r := range append(openRegistries(regs, phase), regs...) {
		if pointed[r.Kind] {
			continue
		}
		pointed[r.Kind] = true
		base := RegistryBaseURL(r.Name)
		switch r.Kind {
		case policy.RegistryGoProxy:
			// No ",direct": the proxy is the only source. GOSUMDB is the
			// verifier key alone, with no URL, so go asks
			// $GOPROXY/sumdb/<name>/supported and reaches the checksum
			// database through the proxy too, with verification on.
			env["GOPROXY"] = base
			env["GOSUMDB"] = r.SumDB
			env["GONOSUMDB"] = strings.Join(r.NoSumDB, ",")
			// Empty, so that no pattern of the repo's fetches a module
			// directly or skips the checksum database (GOPRIVATE implies
			// both). GONOSUMCHECK is not read by go 1.26; cleared all the
			// same, in case a go or a wrapper ever reads it.
			for _, k := range []string{"GOPRIVATE", "GONOPROXY", "GOINSECURE", "GONOSUMCHECK"} {
				env[k] = ""
			}
		case policy.RegistryNPM:
			// The audit is refused by the egress anyway (it leaks the
			// dependency tree); fund and update checks only add requests.
			env["npm_config_registry"] = base
			env["npm_config_audit"] = "false"
			env["npm_config_fund"] = "false"
			env["npm_config_update_notifier"] = "false"
			// A lockfile's "resolved" URLs name the registry it was made
			// against; npm fetches them there unless told to put its
			// configured registry in their place, always.
			env["npm_config_replace_registry_host"] = "always"
		case policy.RegistryPyPI:
			// pip refuses a plain-http index unless its host is trusted;
			// the forwarder is loopback inside the sandbox.
			env["PIP_INDEX_URL"] = base + "simple/"
			env["PIP_TRUSTED_HOST"] = EgressListen
		}
	}
	return env
}

// phaseEnv is phase's package-manager environment for regs (registryEnv,
// as "K=V", to win over the repo's) and the repo's env without those names
// in any case.
func phaseEnv(regs []contract.Registry, phase contract.Phase, env map[string]string) (repoEnv map[string]string, own []string) {
	reg := registryEnv(regs, phase)
	for _, k := range slices.Sorted(maps.Keys(reg)) {
		own = append(own, k+"="+reg[k])
	}
	return withoutRegistryNames(env, reg), own
}

// withoutRegistryNames is repoEnv without the names regEnv sets, compared
// case-insensitively: npm reads npm_config_* in any case, and which of
// NPM_CONFIG_REGISTRY and npm_config_registry wins would be npm's choice.
// repoEnv itself is not changed.
func withoutRegistryNames(repoEnv, regEnv map[string]string) map[string]string {
	if len(regEnv) == 0 {
		return repoEnv
	}
	out := make(map[string]string, len(repoEnv))
	for k, v := range repoEnv {
		drop := false
		for r := range regEnv {
			if strings.EqualFold(k, r) {
				drop = true
				break
			}
		}
		if !drop {
			out[k] = v
		}
	}
	return out
}
