package contract

import (
	"strings"
	"testing"
)

func TestSpecRegistriesAreValidated(t *testing.T) {
	const key = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"
	cases := map[string]struct {
		regs []Registry
		want string // "" means valid
	}{
		"go and npm":          {[]Registry{{Name: "go", Kind: "goproxy", Phases: []Phase{PhaseSetup}, SumDB: key}, {Name: "npm", Kind: "npm", Phases: []Phase{PhaseVerify}}}, ""},
		"unknown kind":        {[]Registry{{Name: "m", Kind: "maven", Phases: []Phase{PhaseSetup}}}, "registries[0].kind: must be one of goproxy, npm, pypi"},
		"bad name":            {[]Registry{{Name: "no/slash", Kind: "npm", Phases: []Phase{PhaseSetup}}}, "registries[0].name"},
		"twice":               {[]Registry{{Name: "a", Kind: "npm", Phases: []Phase{PhaseSetup}}, {Name: "a", Kind: "pypi", Phases: []Phase{PhaseSetup}}}, `registries[1].name: "a" is listed twice`},
		"no phase":            {[]Registry{{Name: "a", Kind: "npm"}}, "registries[0].phases: must name at least one phase"},
		"upload phase":        {[]Registry{{Name: "a", Kind: "npm", Phases: []Phase{PhaseUpload}}}, "registries[0].phases[0]: must be setup, agent or verify"},
		"go without sumdb":    {[]Registry{{Name: "go", Kind: "goproxy", Phases: []Phase{PhaseSetup}}}, "registries[0].sumdb: must be a checksum database's verifier key"},
		"sumdb with a URL":    {[]Registry{{Name: "go", Kind: "goproxy", Phases: []Phase{PhaseSetup}, SumDB: key + " https://sum.golang.org"}}, "registries[0].sumdb"},
		"sumdb for npm":       {[]Registry{{Name: "n", Kind: "npm", Phases: []Phase{PhaseSetup}, SumDB: key}}, "registries[0].sumdb: is for goproxy registries only"},
		"two patterns in one": {[]Registry{{Name: "go", Kind: "goproxy", Phases: []Phase{PhaseSetup}, SumDB: key, NoSumDB: []string{"a.com/*,b.com/*"}}}, "registries[0].no_sumdb[0]: must be one module path pattern"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := validSpec()
			s.Registries = c.regs
			err := s.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("Validate = %v, want it to say %q", err, c.want)
			}
		})
	}
	r := Registry{Phases: []Phase{PhaseSetup, PhaseVerify}}
	if !r.Serves(PhaseVerify) || r.Serves(PhaseAgent) {
		t.Fatal("Serves does not follow Phases")
	}
}
