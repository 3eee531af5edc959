package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
)

// twoCommits makes a repository of two commits and returns its directory
// and both commits, the second checked out.
func twoCommits(t *testing.T) (dir, first, second string) {
	t.Helper()
	dir = t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	first = git("rev-parse", "HEAD")
	git("commit", "-q", "--allow-empty", "-m", "two")
	return dir, first, git("rev-parse", "HEAD")
}

// keyFiles writes a new Ed25519 private key (PKCS#8 PEM) and its public
// key (PEM) and returns their paths.
func keyFiles(t *testing.T) (privPath, pubPath string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv) // an ed25519 key always marshals
	pubDER, _ := x509.MarshalPKIXPublicKey(pub) // as does its public key
	dir := t.TempDir()
	privPath, pubPath = filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub.pem")
	if err := os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return privPath, pubPath
}

// signingKey is the keyring of a new key under id, and its public key's
// path.
func signingKey(t *testing.T, id string) (*provenance.Keyring, string) {
	t.Helper()
	privPath, pubPath := keyFiles(t)
	k, err := provenance.LoadKeyring(config.Provenance{SigningKey: id, Keys: []config.ProvenanceKey{{ID: id, PrivateKeyPath: privPath}}})
	if err != nil {
		t.Fatal(err)
	}
	return k, pubPath
}

func attestation(t *testing.T, k *provenance.Keyring, sha string) string {
	t.Helper()
	st, err := provenance.Statement(provenance.Facts{Repository: "acme/widgets", SessionID: "s1", AttemptID: "a1", CommitSHA: sha,
		Evidence: contract.Evidence{Outcome: contract.OutcomeOK}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := k.Sign(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(env) // an envelope of strings always marshals
	path := filepath.Join(t.TempDir(), "attestation.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `inspect verify` accepts an attestation of the checkout's HEAD signed by
// a trusted key, given as a file (under its id or any) or at --keys-url,
// and refuses, exit 1, one whose subject is another commit; a missing key
// is a usage error, exit 2.
func TestVerifyCommand(t *testing.T) {
	dir, first, second := twoCommits(t)
	k, pubPath := signingKey(t, "k2")
	keys := httptest.NewServer(k.KeysHandler())
	t.Cleanup(keys.Close)
	ofHead, ofFirst := attestation(t, k, second), attestation(t, k, first)
	for name, tc := range map[string]struct {
		args []string
		code int
		out  string
	}{
		"keys url":         {[]string{ofHead, "--keys-url", keys.URL, "--checkout", dir}, 0, "verified: signed by key k2; the attested commit " + second},
		"key file with id": {[]string{"--key", "k2=" + pubPath, "--checkout", dir, ofHead}, 0, "verified: signed by key k2"},
		"bare key file":    {[]string{ofHead, "--key", pubPath, "--checkout", dir}, 0, "session s1, attempt a1, repository acme/widgets"},
		"key file under another id": {[]string{ofHead, "--key", "k1=" + pubPath, "--checkout", dir}, 1,
			"refused: no signature verifies with a trusted key"},
		"another commit": {[]string{ofFirst, "--keys-url", keys.URL, "--checkout", dir}, 1,
			"refused: the attestation's subject is commit " + first + ", but " + dir + " is at " + second},
		"not a checkout": {[]string{ofHead, "--keys-url", keys.URL, "--checkout", t.TempDir()}, 1, "reading the checkout's HEAD"},
		"no key":         {[]string{ofHead, "--checkout", dir}, 2, "Usage: inspect verify"},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"verify"}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%s: exit %d, want %d with %q\nstdout: %s\nstderr: %s", name, code, tc.code, tc.out, out.String(), errOut.String())
		}
	}
}
