package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/inspecthq/inspect/app/provenance"
	"github.com/inspecthq/inspect/config"
)

const verifyUsage = `Usage: inspect verify ATTESTATION [--key [ID=]PUBKEY.pem ...] [--keys-url URL] [--checkout DIR]

Checks an Inspect attestation (the DSSE envelope a session's check run links
to, saved as a file; - reads it from stdin): that a trusted key signed it,
that it is an in-toto statement of Inspect's provenance, and that the
commit it attests is the checkout's HEAD. Exit 0 when all hold, 1 when one
does not, 2 on a usage error.

Trusted keys: --keys-url, the server's published keys (GET
https://INSPECT/provenance/keys), each under its id; or --key files, an
Ed25519 public key in PEM, under the id ID= names (without it, under any id).

Flags:
`

// verifyFlagTimeout bounds the fetch of --keys-url.
const verifyFlagTimeout = 30 * time.Second

// maxKeysBytes bounds the keys' JSON read from --keys-url, and maxEnvelopeBytes the attestation.
const (
	maxKeysBytes     = 1 << 20
	maxEnvelopeBytes = 16 << 20
)

type keyFlags []string

func (k *keyFlags) String() string     { return strings.Join(*k, ",") }
func (k *keyFlags) Set(v string) error { *k = append(*k, v); return nil }

func verifyCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, verifyUsage); fs.PrintDefaults() }
	var keys keyFlags
	fs.Var(&keys, "key", "a trusted Ed25519 public key (PEM), as [ID=]PATH; repeatable")
	keysURL := fs.String("keys-url", "", "the server's provenance keys (https://INSPECT/provenance/keys)")
	checkout := fs.String("checkout", ".", "the git checkout whose HEAD must be the attested commit")
	// The attestation may come before or after the flags.
	var positional []string
	rest := args
	for {
		if code, done := parseFlags(fs, rest); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 || (len(keys) == 0 && *keysURL == "") {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifyFlagTimeout)
	defer cancel()
	trusted, err := trustedKeys(ctx, keys, *keysURL)
	if err != nil {
		fmt.Fprintf(stderr, "inspect verify: %v\n", err)
		return 2
	}
	envelope, err := readAttestation(positional[0])
	if err != nil {
		fmt.Fprintf(stderr, "inspect verify: %v\n", err)
		return 2
	}
	v, err := provenance.Verify(ctx, envelope, trusted)
	if err != nil {
		fmt.Fprintf(stderr, "inspect verify: refused: %v\n", err)
		return 1
	}
	head, err := checkoutHead(ctx, *checkout)
	if err != nil {
		fmt.Fprintf(stderr, "inspect verify: %v\n", err)
		return 1
	}
	subject := v.SubjectCommit()
	if subject == "" || !strings.EqualFold(subject, head) {
		fmt.Fprintf(stderr, "inspect verify: refused: the attestation's subject is commit %s, but %s is at %s\n", subjectOrNone(subject), *checkout, head)
		return 1
	}
	fmt.Fprintf(stdout, "verified: signed by key %s; the attested commit %s is the HEAD of %s\n", v.KeyID, subject, *checkout)
	if p := v.Statement.GetPredicate().AsMap(); p != nil {
		fmt.Fprintf(stdout, "session %v, attempt %v, repository %v\n", p["session_id"], p["attempt_id"], p["repository"])
	}
	return 0
}

func subjectOrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// checkProvenanceKeys parses the provenance keys as serve will
// (config.Probes).
func checkProvenanceKeys(p config.Provenance) error {
	_, err := provenance.LoadKeyring(p)
	return err
}

// trustedKeys are the --key files and the keys at --keys-url.
func trustedKeys(ctx context.Context, files []string, keysURL string) ([]provenance.TrustedKey, error) {
	var out []provenance.TrustedKey
	for _, f := range files {
		id, path := "", f
		if before, after, ok := strings.Cut(f, "="); ok && config.ProvenanceKeyIDRE.MatchString(before) {
			id, path = before, after
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--key: %w", err)
		}
		sv, err := provenance.ParseKey(id, b)
		if err != nil {
			return nil, fmt.Errorf("--key %s: %w", path, err)
		}
		out = append(out, provenance.TrustedKey{ID: id, Public: sv.Public()})
	}
	if keysURL != "" {
		b, err := fetchKeys(ctx, keysURL)
		if err != nil {
			return nil, err
		}
		ks, err := provenance.TrustedKeys(b)
		if err != nil {
			return nil, fmt.Errorf("--keys-url %s: %w", keysURL, err)
		}
		out = append(out, ks...)
	}
	return out, nil
}

func fetchKeys(ctx context.Context, u string) ([]byte, error) {
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return nil, fmt.Errorf("--keys-url must be an http(s) URL (found %q)", u)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("--keys-url: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--keys-url: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("--keys-url %s answered %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxKeysBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--keys-url: %w", err)
	}
	if len(b) > maxKeysBytes {
		return nil, fmt.Errorf("--keys-url %s: more than %d bytes", u, maxKeysBytes)
	}
	return b, nil
}

func readAttestation(path string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxEnvelopeBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxEnvelopeBytes {
		return nil, errors.New("the attestation is larger than any Inspect writes")
	}
	return b, nil
}

// checkoutHead is `git rev-parse HEAD` in dir, run as argv.
func checkoutHead(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "HEAD")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the checkout's HEAD (git -C %s rev-parse HEAD): %v: %s", dir, err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
