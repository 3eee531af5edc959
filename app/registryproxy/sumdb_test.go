package registryproxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/contract"
)

// Only the registry's own checksum database (its sumdb setting's name, the
// verifier key before its first '+') is reached through a goproxy
// registry: a path under another database's name is refused here and never
// reaches the upstream, which would get the upstream's credential with it.
// go asks $GOPROXY/sumdb/<name>/supported and then lookup/ and tile/ under
// the same name (go.dev/ref/mod, "Checksum database").
func TestOnlyTheConfiguredChecksumDatabaseReachesTheUpstream(t *testing.T) {
	r := newRig(t, 1<<20, module("alpha"))
	name, key := r.up.SumDB()
	reg := r.regs["go"]
	reg.SumDB = key
	r.regs["go"] = reg
	allowed := contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup, SumDB: key}
	for _, tc := range []struct {
		rest    string
		refused bool
	}{
		{"sumdb/sum.example.org/supported", true},
		{"sumdb/sum.golang.org/lookup/fake.test/alpha@v1.0.0", true},
		{"sumdb/" + name + ".evil/supported", true},
		{"sumdb/" + strings.ToUpper(name[:1]) + name[1:] + "/supported", true},
		{"sumdb/" + name + "/supported", false},
		{"sumdb/" + name + "/lookup/fake.test/alpha@v1.0.0", false},
	} {
		t.Run(tc.rest, func(t *testing.T) {
			before := len(r.up.Requests())
			w := r.get(t, "GET", "go", tc.rest, allowed)
			reached := len(r.up.Requests()) - before
			if tc.refused {
				if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "checksum database") {
					t.Errorf("answered %d: %s", w.Code, w.Body)
				}
				if reached != 0 {
					t.Errorf("%d requests reached the upstream: %+v", reached, r.up.Requests()[before:])
				}
				return
			}
			if w.Code != http.StatusOK || reached != 1 {
				t.Errorf("answered %d with %d upstream requests: %s", w.Code, reached, w.Body)
			}
		})
	}
}

// A registry with no sumdb setting reaches the public database's name
// (config.DefaultSumDB), and no other.
func TestAChecksumDatabaseUnsetIsSumGolangOrg(t *testing.T) {
	r := newRig(t, 1<<20, module("alpha"))
	allowed := contract.Registry{Name: "go", Kind: "goproxy", Phases: goSetup}
	before := len(r.up.Requests())
	if w := r.get(t, "GET", "go", "sumdb/sum.example.org/supported", allowed); w.Code != http.StatusForbidden {
		t.Errorf("another database answered %d: %s", w.Code, w.Body)
	}
	if n := len(r.up.Requests()) - before; n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	// The stand-in serves its own database only, so sum.golang.org's path
	// reaches it and is not found there: passed on, not refused.
	if w := r.get(t, "GET", "go", "sumdb/sum.golang.org/supported", allowed); w.Code == http.StatusForbidden {
		t.Errorf("sum.golang.org refused: %s", w.Body)
	}
	if n := len(r.up.Requests()) - before; n != 1 {
		t.Errorf("%d requests reached the upstream, want 1", n)
	}
}
