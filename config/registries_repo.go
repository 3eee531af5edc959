package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/inspecthq/inspect/contract"
)

// RepoRegistry is how a repository narrows one of the server's package
// registries (`registries.<name>` in .github/inspect.yml). Which phases may
// use a registry is server policy (egress.registries.<name>.phases); a
// repository may only take phases away, or the whole registry, never add
// (decision 0021).
type RepoRegistry struct {
	// Phases, when set, are the phases the repository's sessions use the
	// registry in, of those the server opens it to: a phase the server
	// does not open stays closed. [] is none, as Off is. Unset is every
	// phase the server opens.
	Phases *[]string `yaml:"phases"`
	// Off true: the repository's sessions do not use the registry at all.
	Off bool `yaml:"off"`
}

// validateRepoRegistries checks the shape of a repository's registries:
// names and phases as the server's own keys have them. Whether the server
// configures each name is known only at session time (NarrowRegistries),
// since the server's registries may change without the file changing.
func validateRepoRegistries(regs map[string]RepoRegistry, add func(key, format string, args ...any)) {
	for _, name := range sortedKeys(regs) {
		r, key := regs[name], "registries."+name
		if err := contract.ValidProviderName(name); err != nil {
			add(key, "the name %v", err)
			continue
		}
		if r.Phases == nil {
			continue
		}
		if r.Off && len(*r.Phases) > 0 {
			add(key, "set off: true or phases, not both")
		}
		for _, p := range *r.Phases {
			if !slices.Contains(contract.RegistryPhases, contract.Phase(p)) {
				add(key+".phases", "must list setup, agent or verify, not %q", p)
			}
		}
	}
}

// NarrowRegistries is what a repository's `registries:` (narrow) leaves of
// the registries the server opens to it (served, as
// Egress.SessionRegistries gives them): a registry turned off, or left with
// no phase, is dropped; the others keep, in the server's order, only the
// phases both name. A name among narrow that served lacks is an error
// naming it and the registries the server does open, for the requester.
func NarrowRegistries(served []contract.Registry, narrow map[string]RepoRegistry) ([]contract.Registry, error) {
	var names []string
	for _, r := range served {
		names = append(names, r.Name)
	}
	var faults []string
	for _, name := range sortedKeys(narrow) {
		if !slices.Contains(names, name) {
			faults = append(faults, fmt.Sprintf("registries.%s: this Inspect server opens no registry named %q to this repository; it opens %s", name, name, orNoRegistry(names)))
		}
	}
	if len(faults) > 0 {
		return nil, errors.New(strings.Join(faults, "; "))
	}
	var out []contract.Registry
	for _, r := range served {
		n, ok := narrow[r.Name]
		switch {
		case !ok || (n.Phases == nil && !n.Off):
			out = append(out, r)
			continue
		case n.Off:
			continue
		}
		var phases []contract.Phase
		for _, p := range r.Phases {
			if slices.Contains(*n.Phases, string(p)) {
				phases = append(phases, p)
			}
		}
		if len(phases) == 0 {
			continue // a spec's registry names at least one phase
		}
		r.Phases = phases
		out = append(out, r)
	}
	return out, nil
}

// orNoRegistry lists names for a message: "goproxy, npmjs", or "none".
func orNoRegistry(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
