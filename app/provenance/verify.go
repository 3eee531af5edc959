package provenance

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
)

// TrustedKey is a public key a verifier trusts: under its id, or under
// any id when ID is "" (a key given as a bare file).
type TrustedKey struct {
	ID     string
	Public crypto.PublicKey
}

// Verified is what Verify established.
type Verified struct {
	// KeyID is the id of the key whose signature verified.
	KeyID     string
	Statement *intoto.Statement
}

// ErrNotSigned is the refusal of an envelope no trusted key signed.
var ErrNotSigned = errors.New("no signature verifies with a trusted key")

// Verify checks the envelope's signature against the trusted keys (by
// key id) with the DSSE library, and decodes the in-toto statement it
// carries, which must be of PredicateType.
func Verify(ctx context.Context, envelopeJSON []byte, keys []TrustedKey) (Verified, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelopeJSON, &env); err != nil {
		return Verified{}, fmt.Errorf("not a DSSE envelope: %w", err)
	}
	if env.PayloadType != PayloadType {
		return Verified{}, fmt.Errorf("the payload type is %q, not %q", env.PayloadType, PayloadType)
	}
	var verifiers []dsse.Verifier
	for _, k := range keys {
		ids := []string{k.ID}
		if k.ID == "" {
			// A bare key is trusted under whatever id a signature names.
			ids = ids[:0]
			for _, s := range env.Signatures {
				ids = append(ids, s.KeyID)
			}
		}
		for _, id := range ids {
			sv, err := verifierOf(id, k.Public)
			if err != nil {
				return Verified{}, err
			}
			verifiers = append(verifiers, sv)
		}
	}
	if len(verifiers) == 0 {
		return Verified{}, errors.New("no trusted key given")
	}
	ev, err := dsse.NewEnvelopeVerifier(verifiers...)
	if err != nil {
		return Verified{}, err
	}
	accepted, payload, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil || len(accepted) == 0 {
		return Verified{}, fmt.Errorf("%w (%v)", ErrNotSigned, err)
	}
	var st intoto.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		return Verified{}, fmt.Errorf("the payload is not an in-toto statement: %w", err)
	}
	if err := st.Validate(); err != nil {
		return Verified{}, fmt.Errorf("the statement: %w", err)
	}
	if st.GetPredicateType() != PredicateType {
		return Verified{}, fmt.Errorf("the predicate type is %q, not %q", st.GetPredicateType(), PredicateType)
	}
	return Verified{KeyID: accepted[0].KeyID, Statement: &st}, nil
}

// verifierOf is a DSSE verifier of an Ed25519 public key under id.
func verifierOf(id string, pub crypto.PublicKey) (dsse.Verifier, error) {
	p, err := PublicPEM(pub)
	if err != nil {
		return nil, err
	}
	return ParseKey(id, []byte(p))
}

// SubjectCommit is the commit the statement's subject names (its
// gitCommit digest), "" when it names none.
func (v Verified) SubjectCommit() string {
	for _, s := range v.Statement.GetSubject() {
		if c := s.GetDigest()["gitCommit"]; c != "" {
			return c
		}
	}
	return ""
}

// TrustedKeys reads a KeySet (the JSON at KeysPath) into trusted keys.
func TrustedKeys(keySetJSON []byte) ([]TrustedKey, error) {
	var set KeySet
	if err := json.Unmarshal(keySetJSON, &set); err != nil {
		return nil, fmt.Errorf("not the provenance keys' JSON: %w", err)
	}
	var out []TrustedKey
	for _, k := range set.Keys {
		if k.KeyID == "" {
			return nil, errors.New("a key without a keyid")
		}
		sv, err := ParseKey(k.KeyID, []byte(k.PublicKey))
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.KeyID, err)
		}
		out = append(out, TrustedKey{ID: k.KeyID, Public: sv.Public()})
	}
	return out, nil
}
