package app_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/runner/local"
)

// newProvenanceKey writes a new Ed25519 key pair as `openssl genpkey
// -algorithm ed25519` and `openssl pkey -pubout` would (PKCS#8 and PKIX
// PEM) and returns the private key's path and the public key's.
func newProvenanceKey(t *testing.T) (private, public string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(priv) // an ed25519 key always marshals
	pubDER, _ := x509.MarshalPKIXPublicKey(pub) // and its public key
	dir := t.TempDir()
	private, public = filepath.Join(dir, "key.pem"), filepath.Join(dir, "key.pub.pem")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return private, public
}

// The issue-37 acceptance for signed provenance, end to end: a real
// sandboxed session of the sample repository (the stand-in agent fixes
// Add, verify runs go test) on a server signing with k2 and keeping the
// retired k1 for verification. Its check run links the attestation on the
// dashboard and the keys; a signed-in reader fetches it there (an
// anonymous request does not get it), and `inspect verify` (the real
// binary) accepts it against the served keys and a clone at the commit.
// It refuses the attestation with its signature altered, the same
// statement signed by a key the server does not have, and the genuine one
// against a checkout of another commit.
func TestRealSessionsAttestationVerifies(t *testing.T) {
	signing, _ := newProvenanceKey(t)
	_, retired := newProvenanceKey(t)
	var lx *local.Executor
	d := newDashboardOn(t, func(t testing.TB, opts ...harnessOption) *harness {
		opts = append(opts, func(c *config.Server) {
			c.Provenance = config.Provenance{SigningKey: "k2", Keys: []config.ProvenanceKey{{ID: "k2", PrivateKeyPath: signing}, {ID: "k1", PublicKeyPath: retired}}}
		})
		h, x := newSandboxHarness(t, opts...)
		lx = x
		return h
	})
	if code, _ := d.deliver("issue_comment", d.event(commentOpts{body: "/inspect make TestAdd pass"})); code != 200 {
		t.Fatal(code)
	}
	d.runWorkers()
	d.waitForAttempt(lx)
	d.runWorkers()
	sess := assertIssueSessionOpenedPR(t, d.harness)

	// The links as the check run gives them.
	runs := d.gh.CheckRuns(owner, repoName)
	if len(runs) != 1 {
		t.Fatalf("check runs: %+v", runs)
	}
	m := regexp.MustCompile("Signed provenance \\(in-toto, DSSE\\) of the commit Inspect made: (\\S+) — check it with `inspect verify` against the keys at (\\S+)\n").
		FindStringSubmatch(runs[0].Summary)
	if m == nil {
		t.Fatalf("the check run does not link the attestation and the keys:\n%s", runs[0].Summary)
	}
	link, keysURL := m[1], m[2]
	if link != d.url+"/sessions/"+sess.ID+"/attempts/"+sess.AttemptID+"/provenance" || keysURL != d.url+provenance.KeysPath {
		t.Fatalf("links %q and %q", link, keysURL)
	}

	// Not to anyone: the attestation names the repository's commands and
	// tests.
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	anon, _ := io.ReadAll(resp.Body) // a short read only weakens the check below
	resp.Body.Close()
	if strings.Contains(string(anon), "payloadType") {
		t.Fatalf("an anonymous request got the attestation: %s", anon)
	}
	d.signIn("alice", "/sessions/"+sess.ID)
	if path := strings.TrimPrefix(link, d.url); !strings.Contains(d.html(), `id="provenance" href="`+path+`"`) {
		t.Errorf("the session page does not link %s:\n%s", path, d.html())
	}
	d.do("open the attestation", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("pre")))
	envelope := d.text("pre")
	var env dsse.Envelope
	if err := json.Unmarshal([]byte(envelope), &env); err != nil || len(env.Signatures) != 1 || env.Signatures[0].KeyID != "k2" {
		t.Fatalf("the dashboard's attestation: %v\n%s", err, envelope)
	}
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	// protojson varies its whitespace on purpose: compared compacted.
	var statement map[string]any
	if err := json.Unmarshal(payload, &statement); err != nil {
		t.Fatalf("the payload: %v\n%s", err, payload)
	}
	compact := string(mustMarshal(t, statement))
	for _, want := range []string{`"gitCommit":"` + sess.CommitSHA + `"`, `"predicateType":"` + provenance.PredicateType + `"`,
		`"argv":["go","test","-json","./..."]`, `"passed":1`, `"preset":"command"`} {
		if !strings.Contains(compact, want) {
			t.Errorf("the statement lacks %s:\n%s", want, compact)
		}
	}

	clone := filepath.Join(t.TempDir(), "clone")
	git(t, "", "clone", "-q", d.gh.GitDir(owner, repoName), clone)
	git(t, clone, "checkout", "-q", "--detach", sess.CommitSHA)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	genuine := write("genuine.json", []byte(envelope))
	verify := func(path string) (int, string) {
		cmd := exec.Command(inspectBinary(t), "verify", path, "--keys-url", keysURL, "--checkout", clone)
		out, _ := cmd.CombinedOutput() // the exit code says what failed
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := verify(genuine); code != 0 || !strings.Contains(out, "verified: signed by key k2; the attested commit "+sess.CommitSHA) {
		t.Fatalf("inspect verify refused the session's attestation: exit %d\n%s", code, out)
	}

	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	sig[len(sig)-1] ^= 0x40
	altered := env
	altered.Signatures = []dsse.Signature{{KeyID: "k2", Sig: base64.StdEncoding.EncodeToString(sig)}}
	// The same statement, signed under k2's id by a key the server does
	// not have.
	unknownKey, _ := newProvenanceKey(t)
	pemBytes, err := os.ReadFile(unknownKey)
	if err != nil {
		t.Fatal(err)
	}
	impostor, err := provenance.ParseKey("k2", pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := dsse.NewEnvelopeSigner(impostor)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := signer.SignPayload(context.Background(), env.PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"altered signature": write("altered.json", mustMarshal(t, altered)),
		"signed by an unknown key": write("forged.json", mustMarshal(t, forged))} {
		if code, out := verify(path); code != 1 || !strings.Contains(out, "refused: no signature verifies with a trusted key") {
			t.Errorf("%s: exit %d\n%s", name, code, out)
		}
	}
	git(t, clone, "checkout", "-q", "--detach", sess.CommitSHA+"^")
	if code, out := verify(genuine); code != 1 || !strings.Contains(out, "refused: the attestation's subject is commit "+sess.CommitSHA) {
		t.Errorf("another commit: exit %d\n%s", code, out)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
