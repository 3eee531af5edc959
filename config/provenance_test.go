package config

import (
	"slices"
	"strings"
	"testing"
)

// The provenance keys' faults, each naming its key: a signing key is
// needed, must be listed and hold a private key; each key has exactly
// one path and a unique id; and the dashboard must be on, where the
// attestations and keys are served.
func TestProvenanceValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		p    Provenance
		web  bool
		want []string
	}{
		"none":                 {Provenance{}, false, nil},
		"rotated":              {Provenance{SigningKey: "k2", Keys: []ProvenanceKey{{ID: "k2", PrivateKeyPath: "/k2"}, {ID: "k1", PublicKeyPath: "/k1"}}}, true, nil},
		"no dashboard":         {Provenance{SigningKey: "k1", Keys: []ProvenanceKey{{ID: "k1", PrivateKeyPath: "/k1"}}}, false, []string{"provenance.keys"}},
		"signing key unlisted": {Provenance{SigningKey: "k3", Keys: []ProvenanceKey{{ID: "k1", PrivateKeyPath: "/k1"}}}, true, []string{"provenance.signing_key"}},
		"no signing key":       {Provenance{Keys: []ProvenanceKey{{ID: "k1", PrivateKeyPath: "/k1"}}}, true, []string{"provenance.signing_key"}},
		"signing key retired":  {Provenance{SigningKey: "k1", Keys: []ProvenanceKey{{ID: "k1", PublicKeyPath: "/k1"}}}, true, []string{"provenance.signing_key"}},
		"signing without keys": {Provenance{SigningKey: "k1"}, true, []string{"provenance.signing_key"}},
		"both paths, bad id, twice": {Provenance{SigningKey: "k1", Keys: []ProvenanceKey{{ID: "k1", PrivateKeyPath: "/a", PublicKeyPath: "/b"}, {ID: "k1", PublicKeyPath: "/c"}, {ID: "a b", PublicKeyPath: "/d"}}}, true,
			// The second k1 is the signing key's id without a private key.
			[]string{"provenance.keys[0]", "provenance.keys[1].id", "provenance.keys[2].id", "provenance.signing_key"}},
	} {
		c := Defaults()
		c.Provenance = tc.p
		if tc.web {
			c.Web.PublicURL = "https://inspect.example.com"
		}
		var got []string
		c.validateProvenance(func(key, format string, args ...any) { got = append(got, key) })
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: faults %q, want %q", name, got, tc.want)
		}
	}
	if !ProvenanceKeyIDRE.MatchString("k-2026.1") || ProvenanceKeyIDRE.MatchString(strings.Repeat("k", 65)) {
		t.Error("a dated key id is refused")
	}
}
