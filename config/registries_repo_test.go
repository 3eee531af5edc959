package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// served is what a server opens to a repository: goproxy to setup and
// verify, npmjs to setup, verify and the agent, pypi to setup.
var served = []contract.Registry{
	{Name: "goproxy", Kind: "goproxy", Phases: []contract.Phase{"setup", "verify"}, SumDB: DefaultSumDB},
	{Name: "npmjs", Kind: "npm", Phases: []contract.Phase{"setup", "agent", "verify"}},
	{Name: "pypi", Kind: "pypi", Phases: []contract.Phase{"setup"}},
}

// A repository's registries: narrow what the server opens, and never
// widen it: a phase the server does not open stays closed.
func TestNarrowRegistriesOnlyTakesAway(t *testing.T) {
	goproxy, npmjs, pypi := served[0], served[1], served[2]
	with := func(r contract.Registry, phases ...contract.Phase) contract.Registry {
		r.Phases = phases
		return r
	}
	cases := map[string]struct {
		yaml string
		want []contract.Registry
	}{
		"no key":                      {"", served},
		"an empty entry":              {"registries: {npmjs: {}}", served},
		"phases unset":                {"registries: {npmjs: {off: false}}", served},
		"one phase of three":          {"registries: {npmjs: {phases: [setup]}}", []contract.Registry{goproxy, with(npmjs, "setup"), pypi}},
		"the server's order is kept":  {"registries: {npmjs: {phases: [verify, setup]}}", []contract.Registry{goproxy, with(npmjs, "setup", "verify"), pypi}},
		"a phase the server closes":   {"registries: {goproxy: {phases: [setup, agent]}}", []contract.Registry{with(goproxy, "setup"), npmjs, pypi}},
		"only phases the server shut": {"registries: {pypi: {phases: [agent, verify]}}", []contract.Registry{goproxy, npmjs}},
		"off":                         {"registries: {goproxy: {off: true}}", []contract.Registry{npmjs, pypi}},
		"no phase is off":             {"registries: {goproxy: {phases: []}}", []contract.Registry{npmjs, pypi}},
		"all off":                     {"registries: {goproxy: {off: true}, npmjs: {off: true}, pypi: {phases: []}}", nil},
		"repeated phases":             {"registries: {npmjs: {phases: [agent, agent]}}", []contract.Registry{goproxy, with(npmjs, "agent"), pypi}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := ParseRepo([]byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got, err := NarrowRegistries(served, r.Registries)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, c.want)
			}
			if err := contract.ValidateRegistries(got); err != nil {
				t.Fatalf("the narrowed registries do not pass the contract: %v", err)
			}
		})
	}
	// The server's own list is not changed by narrowing it.
	if len(served[1].Phases) != 3 {
		t.Fatalf("served was changed: %+v", served[1])
	}
}

// A name the server does not open to the repository is a fault that names
// it and what the server does open; all such names are reported at once.
func TestNarrowRegistriesRefusesNamesTheServerDoesNotOpen(t *testing.T) {
	r, err := ParseRepo([]byte("registries: {npmjs: {phases: [setup]}, internal: {off: true}, crates: {phases: [setup]}}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NarrowRegistries(served, r.Registries)
	want := `registries.crates: this Inspect server opens no registry named "crates" to this repository; it opens goproxy, npmjs, pypi; ` +
		`registries.internal: this Inspect server opens no registry named "internal" to this repository; it opens goproxy, npmjs, pypi`
	if err == nil || err.Error() != want {
		t.Fatalf("NarrowRegistries = %v\nwant %s", err, want)
	}
	if _, err := NarrowRegistries(nil, r.Registries); err == nil || !strings.Contains(err.Error(), "; it opens none") {
		t.Fatalf("with no registries served: %v", err)
	}
}

// The file's shape is checked when it is parsed, with the key named.
func TestParseRepoRegistriesRefused(t *testing.T) {
	cases := map[string]string{
		"registries: {npmjs: {phases: [publish]}}":          `registries.npmjs.phases: must list setup, agent or verify, not "publish"`,
		"registries: {npmjs: {off: true, phases: [setup]}}": "registries.npmjs: set off: true or phases, not both",
		"registries: {NPM: {off: true}}":                    "registries.NPM: the name",
		"registries: {npmjs: {phases: setup}}":              "cannot unmarshal !!str `setup`",
		"registries: {npmjs: {url: https://evil.example}}":  "unknown key `url`",
		"registries: {npmjs: {token: abc}}":                 "unknown key `token`",
	}
	for input, want := range cases {
		_, err := ParseRepo([]byte(input))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRepo(%q) = %v, want it to say %q", input, err, want)
		}
	}
}

// Every key of a repository's registries: is in docs/configuration.md.
func TestRepoRegistriesKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"registries.<name>"}
	rt := reflect.TypeOf(RepoRegistry{})
	for i := range rt.NumField() {
		keys = append(keys, "registries.<name>."+rt.Field(i).Tag.Get("yaml"))
	}
	for _, k := range keys {
		if !strings.Contains(string(doc), "| `"+k+"` |") {
			t.Errorf("repo key %s is not in docs/configuration.md's table", k)
		}
	}
}
