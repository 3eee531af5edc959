package config

import (
	"fmt"
	"regexp"
)

// Provenance is the signing of each attempt that reports a change: an
// in-toto attestation in a DSSE envelope (app/provenance, decision 0078).
// Off while no key is configured; then nothing is attested and the check
// run says nothing of it.
type Provenance struct {
	// Keys are the server's provenance keys, each under an id that the
	// envelope's signature names. Several at once, so that a key can be
	// rotated while the attestations it signed still verify: the new one
	// with its private key, the retired ones with their public key only.
	Keys []ProvenanceKey `yaml:"keys"`
	// SigningKey is the id of the key that signs new attestations; it
	// must have a private_key_path.
	SigningKey string `yaml:"signing_key"`
}

// ProvenanceKey is one provenance key: an Ed25519 private key (PKCS#8,
// PEM "PRIVATE KEY", as `openssl genpkey -algorithm ed25519` writes it),
// or, for a retired key kept for verification, its public key (PEM
// "PUBLIC KEY"). Exactly one of the two paths is set.
type ProvenanceKey struct {
	ID             string `yaml:"id"`
	PrivateKeyPath string `yaml:"private_key_path"`
	PublicKeyPath  string `yaml:"public_key_path"`
}

// ProvenanceKeyIDRE is what a provenance key's id may be: it is written
// into every envelope's signature and into the keys' JSON.
var ProvenanceKeyIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ProvenanceEnabled reports whether attempts are attested.
func (c Server) ProvenanceEnabled() bool { return c.Provenance.SigningKey != "" }

// validateProvenance adds the provenance section's faults.
func (c Server) validateProvenance(add func(key, format string, args ...any)) {
	p := c.Provenance
	if len(p.Keys) == 0 {
		if p.SigningKey != "" {
			add("provenance.signing_key", "names %q, but provenance.keys is empty", p.SigningKey)
		}
		return
	}
	seen := map[string]bool{}
	signing := false
	for i, k := range p.Keys {
		key := fmt.Sprintf("provenance.keys[%d]", i)
		if !ProvenanceKeyIDRE.MatchString(k.ID) {
			add(key+".id", "must be 1 to 64 letters, digits, '.', '_' or '-' (found %q)", k.ID)
		}
		if seen[k.ID] {
			add(key+".id", "%q is listed twice", k.ID)
		}
		seen[k.ID] = true
		if (k.PrivateKeyPath == "") == (k.PublicKeyPath == "") {
			add(key, "set exactly one of private_key_path (a signing key) and public_key_path (a retired key, verify only)")
		}
		if k.ID == p.SigningKey {
			signing = true
			if k.PrivateKeyPath == "" {
				add("provenance.signing_key", "names %q, which has no private_key_path", k.ID)
			}
		}
	}
	switch {
	case p.SigningKey == "":
		add("provenance.signing_key", "is needed with provenance.keys: the id of the key that signs")
	case !signing:
		add("provenance.signing_key", "names %q, which provenance.keys does not list", p.SigningKey)
	}
	if !c.WebEnabled() {
		add("provenance.keys", "need web.public_url: the attestations are served to the repository's readers on the dashboard, and the public keys under it")
	}
}
