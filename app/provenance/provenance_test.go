package provenance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// writeKey writes a new Ed25519 key as PKCS#8 PEM (what `openssl genpkey
// -algorithm ed25519` writes) and its public key as PKIX PEM, and returns
// both paths.
func writeKey(t *testing.T, dir, name string) (private, public string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	private, public = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".pub.pem")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return private, public
}

const commit = "0123456789abcdef0123456789abcdef01234567"

func facts() provenance.Facts {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	return provenance.Facts{
		Repository: "acme/widgets", SessionID: "s1", AttemptID: "a1", CommitSHA: commit, Patch: "--- a/x\n+++ b/x\n",
		AgentPreset: "codex", Model: "gpt-5", SignedAt: start.Add(time.Minute),
		Evidence: contract.Evidence{
			PinnedSHA: strings.Repeat("9", 40), StartedAt: start, EndedAt: start.Add(40 * time.Second), Outcome: contract.OutcomeOK,
			Workspace: &contract.Workspace{Source: contract.WorkspaceSnapshot, SnapshotDigest: "sha256:" + strings.Repeat("5e", 32),
				BaseImage: &contract.BaseImage{Name: "ghcr.io/acme/go", Digest: "sha256:" + strings.Repeat("ba", 32)}},
			ToolsImage: "sha256:" + strings.Repeat("70", 32),
			Commands: []contract.CommandResult{
				{Phase: contract.PhaseAgent, Name: "agent", Argv: []string{"codex", "exec"}, DurationMS: 30000, OutputTail: "secret-free but long"},
				{Phase: contract.PhaseVerify, Name: "unit tests", Argv: []string{"go", "test", "./..."}, ExitCode: 1, DurationMS: 1200},
			},
			Tests:  &contract.TestSummary{Passed: 3, Failed: 1, Failures: []contract.TestFailure{{Name: "TestAdd"}}},
			Usage:  &contract.TokenUsage{Input: 100, Output: 20, Total: 120, Requests: 2},
			Egress: &contract.EgressAudit{},
		},
	}
}

func keyring(t *testing.T, p config.Provenance) *provenance.Keyring {
	t.Helper()
	k, err := provenance.LoadKeyring(p)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func sign(t *testing.T, k *provenance.Keyring, f provenance.Facts) []byte {
	t.Helper()
	st, err := provenance.Statement(f)
	if err != nil {
		t.Fatal(err)
	}
	env, err := k.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// served is what a reviewer fetches at KeysPath, read back as trusted keys.
func served(t *testing.T, k *provenance.Keyring) []provenance.TrustedKey {
	t.Helper()
	rec := httptest.NewRecorder()
	k.KeysHandler().ServeHTTP(rec, httptest.NewRequest("GET", provenance.KeysPath, nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("keys: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "PRIVATE") {
		t.Fatalf("the served keys hold a private key:\n%s", rec.Body)
	}
	ks, err := provenance.TrustedKeys(rec.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// The statement is in-toto v1 with the commit and the patch as subjects
// and Inspect's predicate holding what the evidence says (no command
// output); it verifies against the served keys under the signing key's id.
func TestSignedStatementVerifiesWithTheServedKeys(t *testing.T) {
	dir := t.TempDir()
	priv, _ := writeKey(t, dir, "k1")
	k := keyring(t, config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: priv}}})
	env := sign(t, k, facts())

	var e dsse.Envelope
	if err := json.Unmarshal(env, &e); err != nil || e.PayloadType != "application/vnd.in-toto+json" || len(e.Signatures) != 1 || e.Signatures[0].KeyID != "k1" {
		t.Fatalf("envelope %s (%v)", env, err)
	}
	payload, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	// protojson varies its whitespace on purpose: compared compacted.
	compact := string(mustJSON(t, st))
	if st["_type"] != "https://in-toto.io/Statement/v1" || st["predicateType"] != provenance.PredicateType {
		t.Fatalf("statement %s", payload)
	}
	patchSum := sha256.Sum256([]byte(facts().Patch))
	for _, want := range []string{`"gitCommit":"` + commit + `"`, `"sha256":"` + hex.EncodeToString(patchSum[:]) + `"`,
		`"tools_image":"sha256:7070`, `"snapshot_digest":"sha256:5e5e`, `"digest":"sha256:baba`, `"preset":"codex"`, `"model":"gpt-5"`,
		`"exit_code":1`, `"duration_ms":1200`, `"egress_audit_sha256":"`, `"failed":1`, `"name":"TestAdd"`, `"requests":2`} {
		if !strings.Contains(compact, want) {
			t.Errorf("the statement lacks %s:\n%s", want, compact)
		}
	}
	if strings.Contains(compact, "secret-free but long") {
		t.Errorf("the statement carries command output:\n%s", payload)
	}
	v, err := provenance.Verify(context.Background(), env, served(t, k))
	if err != nil || v.KeyID != "k1" || v.SubjectCommit() != commit {
		t.Fatalf("verify: %+v %v", v, err)
	}
}

// Rotation: after k2 signs and k1 is kept as a public key only, both the
// old and the new attestations verify against the served keys; an
// altered signature, a key the server never had and a payload changed
// after signing are refused.
func TestRotationAndRefusals(t *testing.T) {
	dir := t.TempDir()
	priv1, pub1 := writeKey(t, dir, "k1")
	priv2, _ := writeKey(t, dir, "k2")
	old := sign(t, keyring(t, config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: priv1}}}), facts())
	rotated := keyring(t, config.Provenance{SigningKey: "k2", Keys: []config.ProvenanceKey{{ID: "k2", PrivateKeyPath: priv2}, {ID: "k1", PublicKeyPath: pub1}}})
	fresh := sign(t, rotated, facts())
	trusted := served(t, rotated)
	for name, env := range map[string][]byte{"old": old, "new": fresh} {
		if _, err := provenance.Verify(context.Background(), env, trusted); err != nil {
			t.Errorf("%s attestation: %v", name, err)
		}
	}

	var e dsse.Envelope
	if err := json.Unmarshal(fresh, &e); err != nil {
		t.Fatal(err)
	}
	sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
	sig[0] ^= 1
	altered := e
	altered.Signatures = []dsse.Signature{{KeyID: "k2", Sig: base64.StdEncoding.EncodeToString(sig)}}
	payload, _ := base64.StdEncoding.DecodeString(e.Payload)
	changed := e
	changed.Payload = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(payload), commit, strings.Repeat("f", 40), 1)))

	privX, _ := writeKey(t, dir, "kx")
	unknownID := sign(t, keyring(t, config.Provenance{SigningKey: "k9", Keys: []config.ProvenanceKey{{ID: "k9", PrivateKeyPath: privX}}}), facts())
	// A key the server does not have, under the id of one it has.
	impostor := sign(t, keyring(t, config.Provenance{SigningKey: "k2", Keys: []config.ProvenanceKey{{ID: "k2", PrivateKeyPath: privX}}}), facts())
	for name, env := range map[string][]byte{"altered signature": mustJSON(t, altered), "changed payload": mustJSON(t, changed),
		"unknown key id": unknownID, "unknown key under a known id": impostor} {
		if _, err := provenance.Verify(context.Background(), env, trusted); !errors.Is(err, provenance.ErrNotSigned) {
			t.Errorf("%s: err = %v, want ErrNotSigned", name, err)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Keys that cannot sign as configured are start-up errors naming the key.
func TestLoadKeyringRefusals(t *testing.T) {
	dir := t.TempDir()
	_, pub := writeKey(t, dir, "k1")
	notAKey := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(notAKey, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		p    config.Provenance
		want string
	}{
		"a public key to sign with": {config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: pub}}}, "holds no private key"},
		"not a key":                 {config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: notAKey}}}, "provenance.keys[0]"},
		"missing file":              {config.Provenance{SigningKey: "k1", Keys: []config.ProvenanceKey{{ID: "k1", PrivateKeyPath: filepath.Join(dir, "nope")}}}, "provenance.keys[0]"},
	} {
		if _, err := provenance.LoadKeyring(tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tc.want)
		}
	}
	if k, err := provenance.LoadKeyring(config.Provenance{}); k != nil || err != nil {
		t.Errorf("no provenance: %v %v", k, err)
	}
}
