// Package provenance is an attempt's signed provenance (decision 0078):
// an in-toto Statement v1 (github.com/in-toto/attestation) whose subject
// is the commit Inspect made and the patch's digest, and whose predicate
// (PredicateType) is what the evidence says of the run; signed into a
// DSSE envelope (github.com/secure-systems-lab/go-securesystemslib/dsse)
// with a key the server holds. Building and verifying are pure over their
// inputs; the keys are read from files once, at start.
//
// Files: keys.go the keyring and its public JSON; statement.go the
// statement; attest.go signing and keeping; verify.go what `inspect
// verify` checks.
package provenance

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"

	"github.com/inspecthq/inspect/config"
)

// KeysPath is where the server serves its provenance public keys, with
// no sign-in: KeySet as JSON.
const KeysPath = "/provenance/keys"

// PublicKey is one provenance key as served: its id (the keyid of the
// signatures it made) and its public key, PEM "PUBLIC KEY" (PKIX).
type PublicKey struct {
	KeyID     string `json:"keyid"`
	PublicKey string `json:"public_key"`
}

// KeySet is the JSON at KeysPath: every configured key, the signing one
// and the retired ones, so that old attestations still verify.
type KeySet struct {
	// SigningKey is the id of the key that signs new attestations.
	SigningKey string      `json:"signing_key"`
	Keys       []PublicKey `json:"keys"`
}

// Keyring is the server's provenance keys.
type Keyring struct {
	signer *signerverifier.ED25519SignerVerifier
	set    KeySet
}

// LoadKeyring reads the keys config.Provenance names; nil, nil when
// provenance is not configured.
func LoadKeyring(p config.Provenance) (*Keyring, error) {
	if p.SigningKey == "" {
		return nil, nil
	}
	k := &Keyring{set: KeySet{SigningKey: p.SigningKey}}
	for i, ck := range p.Keys {
		path := ck.PublicKeyPath
		if ck.PrivateKeyPath != "" {
			path = ck.PrivateKeyPath
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("provenance.keys[%d]: %w", i, err)
		}
		sv, err := ParseKey(ck.ID, b)
		if err != nil {
			return nil, fmt.Errorf("provenance.keys[%d] (%s): %w", i, path, err)
		}
		if ck.PrivateKeyPath != "" && !isPrivate(b) {
			return nil, fmt.Errorf("provenance.keys[%d].private_key_path: %s holds no private key", i, path)
		}
		pub, err := PublicPEM(sv.Public())
		if err != nil {
			return nil, err
		}
		k.set.Keys = append(k.set.Keys, PublicKey{KeyID: ck.ID, PublicKey: pub})
		if ck.ID == p.SigningKey {
			k.signer = sv
		}
	}
	if k.signer == nil {
		return nil, fmt.Errorf("provenance.signing_key %q: no such key", p.SigningKey)
	}
	return k, nil
}

// ParseKey reads an Ed25519 key, private (PKCS#8) or public (PKIX), in
// PEM, as a DSSE signer and verifier whose key id is id.
func ParseKey(id string, pemBytes []byte) (*signerverifier.ED25519SignerVerifier, error) {
	key, err := signerverifier.LoadKey(pemBytes)
	if err != nil {
		return nil, err
	}
	if key.KeyType != signerverifier.ED25519KeyType {
		return nil, fmt.Errorf("a %s key; provenance keys are ed25519", key.KeyType)
	}
	key.KeyID = id
	return signerverifier.NewED25519SignerVerifierFromSSLibKey(key)
}

func isPrivate(pemBytes []byte) bool {
	b, _ := pem.Decode(pemBytes)
	return b != nil && b.Type == signerverifier.PrivateKeyPEM
}

// PublicPEM is an Ed25519 public key as PEM "PUBLIC KEY".
func PublicPEM(pub any) (string, error) {
	if _, ok := pub.(ed25519.PublicKey); !ok {
		return "", errors.New("not an ed25519 public key")
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: signerverifier.PublicKeyPEM, Bytes: der})), nil
}

// SigningKeyID is the id of the key that signs.
func (k *Keyring) SigningKeyID() string { return k.set.SigningKey }

// KeySet is the public keys, as served at KeysPath.
func (k *Keyring) KeySet() KeySet { return k.set }

// signer is the DSSE envelope signer of the signing key.
func (k *Keyring) envelopeSigner() (*dsse.EnvelopeSigner, error) {
	return dsse.NewEnvelopeSigner(k.signer)
}

// KeysHandler serves the public keys at KeysPath to anyone: they are
// public keys, and a reviewer verifies with them.
func (k *Keyring) KeysHandler() http.Handler {
	body, err := json.MarshalIndent(k.set, "", "  ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.Error(w, "the keys could not be written", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(append(body, '\n')) // a write to a gone client needs no handling
	})
}
