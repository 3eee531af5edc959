package contract

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestRedactBuiltInFormats(t *testing.T) {
	r := NewRedactor()
	for name, tok := range fakeTokens() {
		t.Run(name, func(t *testing.T) {
			in := "before " + tok + " after"
			got := r.Redact(in)
			if strings.Contains(got, tok) || !strings.Contains(got, Redacted) {
				t.Fatalf("Redact(%q) = %q", in, got)
			}
			if !strings.HasPrefix(got, "before ") {
				t.Fatalf("text before the secret was lost: %q", got)
			}
			if SecretKind(got) != "" {
				t.Fatalf("redacted text still looks like %s: %q", SecretKind(got), got)
			}
		})
	}
}

func TestRedactNewInstallationToken(t *testing.T) {
	tok := newGHS()
	if len(tok) < 500 || !strings.Contains(tok, ".") || strings.Count(tok, "_") < 2 {
		t.Fatalf("the test token is not of the new form: %d chars", len(tok))
	}
	for _, in := range []string{
		tok,
		"GITHUB_TOKEN=" + tok + "\n",
		`{"token":"` + tok + `","expires_at":"2025-01-01T00:00:00Z"}`,
		"remote: https://x-access-token:" + tok + "@github.com/o/r.git",
	} {
		got := NewRedactor().Redact(in)
		if strings.Contains(got, "12345678_") || strings.Contains(got, tok[40:80]) {
			t.Errorf("part of the token survived: %q", got)
		}
	}
	if got := NewRedactor().Redact(`{"token":"` + tok + `","x":1}`); got != `{"token":"[REDACTED]","x":1}` {
		t.Errorf("JSON around the token was damaged: %q", got)
	}
}

func TestRedactContexts(t *testing.T) {
	ghs := fakeToken("gh"+"s_", 36)
	opaque := "Zm9vYmFyYmF6cXV4"
	cases := []struct{ in, want string }{
		{"Authorization: Bearer " + opaque, "Authorization: Bearer [REDACTED]"},
		{"authorization: token " + opaque + "\nnext line", "authorization: token [REDACTED]\nnext line"},
		{"Proxy-Authorization: Basic " + opaque, "Proxy-Authorization: Basic [REDACTED]"},
		{`curl -H "Authorization: Bearer ` + opaque + `" https://api`, `curl -H "Authorization: Bearer [REDACTED]" https://api`},
		{`{"Authorization":"token ` + opaque + `"}`, `{"Authorization":"token [REDACTED]"}`},
		{"map[Authorization:[Bearer " + opaque + "] Accept:[*/*]]", "map[Authorization:[Bearer [REDACTED]] Accept:[*/*]]"},
		{"Authorization: " + opaque, "Authorization: [REDACTED]"},
		{"https://x-access-token:" + opaque + "@github.com/o/r", "https://x-access-token:[REDACTED]@github.com/o/r"},
		{"x-access-token:" + opaque + "@github.com", "x-access-token:[REDACTED]@github.com"},
		{"https://user:" + opaque + "@example.com/x", "https://user:[REDACTED]@example.com/x"},
		{"git clone https://github.com/o/r.git", "git clone https://github.com/o/r.git"},
		{"https://example.com:8080/path@x", "https://example.com:8080/path@x"},
		{"token " + ghs + ".", "token [REDACTED]"},
		{"-----BEGIN " + "RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"log\n-----BEGIN " + "PRIVATE KEY-----\nMIIE\ntruncated", "log\n[REDACTED]"},
		{"two: " + ghs + " and " + ghs, "two: [REDACTED] and [REDACTED]"},
		// Not secrets.
		{"the ghs_ prefix marks installation tokens", "the ghs_ prefix marks installation tokens"},
		{"task-runner-configuration-file-name", "task-runner-configuration-file-name"},
		{"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		{"", ""},
	}
	r := NewRedactor()
	for _, tc := range cases {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactExactValues(t *testing.T) {
	session := "sess-0123456789abcdef"
	key := "model-key-that-has-no-known-format"
	r := NewRedactor(session, "short", "", "1234567") // the short ones are ignored
	r.Add(key, session)                               // repeats are harmless
	in := fmt.Sprintf("token=%s key=%s word=short num=1234567 again %s", session, key, session)
	want := "token=[REDACTED] key=[REDACTED] word=short num=1234567 again [REDACTED]"
	if got := r.Redact(in); got != want {
		t.Fatalf("Redact\n got %q\nwant %q", got, want)
	}
	// A secret that contains another is replaced whole.
	r2 := NewRedactor("abcdefgh", "abcdefgh-ijklmnop")
	if got := r2.Redact("x abcdefgh-ijklmnop y abcdefgh"); got != "x [REDACTED] y [REDACTED]" {
		t.Fatalf("overlapping secrets: %q", got)
	}
	// A value inside the marker is ignored, so markers stay intact.
	r3 := NewRedactor("REDACTED")
	if got := r3.Redact("a " + Redacted); got != "a "+Redacted {
		t.Fatalf("marker damaged: %q", got)
	}
	// Exact values may hold regular-expression syntax.
	r4 := NewRedactor("a.b*c+d?(e)[f]")
	if got := r4.Redact("x a.b*c+d?(e)[f] y aXbbcd"); got != "x [REDACTED] y aXbbcd" {
		t.Fatalf("regexp syntax in a secret: %q", got)
	}
}

func TestRedactIsIdempotent(t *testing.T) {
	r := NewRedactor("exact-secret-value")
	var in strings.Builder
	for _, tok := range fakeTokens() {
		in.WriteString("x " + tok + " y\n")
	}
	in.WriteString("Authorization: Bearer abc\nmap[Authorization:[Bearer abc]]\nhttps://u:p@h/\nexact-secret-value\n")
	once := r.Redact(in.String())
	if twice := r.Redact(once); twice != once {
		t.Fatalf("not idempotent:\n once %q\ntwice %q", once, twice)
	}
}

func TestRedactNilAndZero(t *testing.T) {
	tok := fakeToken("gh"+"p_", 36)
	var nilR *Redactor
	var zero Redactor
	for _, r := range []*Redactor{nilR, &zero} {
		if got := r.Redact("a " + tok); got != "a "+Redacted {
			t.Errorf("Redact = %q", got)
		}
	}
	zero.Add("now-a-secret")
	if got := zero.Redact("now-a-secret"); got != Redacted {
		t.Errorf("zero value after Add: %q", got)
	}
}

func TestRedactBytes(t *testing.T) {
	r := NewRedactor("exact-secret-value")
	in := []byte("a exact-secret-value b")
	orig := string(in)
	got := r.RedactBytes(in)
	if string(got) != "a [REDACTED] b" {
		t.Fatalf("RedactBytes = %q", got)
	}
	if string(in) != orig {
		t.Fatal("RedactBytes changed its input")
	}
	if r.RedactBytes(nil) != nil {
		t.Fatal("nil did not stay nil")
	}
	if got := r.RedactBytes([]byte{}); got == nil || len(got) != 0 {
		t.Fatalf("empty became %v", got)
	}
}

func TestRedactStrings(t *testing.T) {
	tok := newGHS()
	r := NewRedactor("exact-secret-value")
	e := validEvidence()
	e.Reason = "clone failed: https://x-access-token:" + tok + "@github.com"
	e.Commands[0].OutputTail = "GITHUB_TOKEN=" + tok
	e.Commands[0].Argv = []string{"agent", "--key=exact-secret-value"}
	e.Tests.Failures[0].Message = "exact-secret-value"
	e.FinalAnswer = "done"
	r.RedactStrings(&e)
	var leaks []string
	walkStrings(reflect.ValueOf(&e).Elem(), "", func(p string, v reflect.Value) {
		if strings.Contains(v.String(), "exact-secret-value") || strings.Contains(v.String(), tok[:30]) {
			leaks = append(leaks, p)
		}
	})
	if len(leaks) > 0 {
		t.Fatalf("secrets left in %v", leaks)
	}
	if e.Commands[0].Argv[1] != "--key="+Redacted || e.FinalAnswer != "done" || e.SessionID != validEvidence().SessionID {
		t.Fatalf("unexpected result: %+v", e)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("redacted evidence invalid: %v", err)
	}
	if found := FindSecrets(&e); len(found) > 0 {
		t.Fatalf("FindSecrets after redaction: %v", found)
	}
	// Manifest content is the change itself and is not touched.
	m := validManifest()
	m.Files[0].Content = []byte("exact-secret-value")
	r.RedactStrings(&m)
	if string(m.Files[0].Content) != "exact-secret-value" {
		t.Fatal("file content was redacted")
	}
	// Non-pointers and nil are ignored.
	r.RedactStrings(e)
	r.RedactStrings(nil)
	r.RedactStrings((*Evidence)(nil))
}

// TestRedactedSpecPasses: gathered text run through a Redactor passes the
// spec's secret check, which is how the app is meant to build specs.
func TestRedactedSpecPasses(t *testing.T) {
	r := NewRedactor()
	s := validSpec()
	var b strings.Builder
	for _, tok := range fakeTokens() {
		b.WriteString(tok + "\n")
	}
	s.Context[1].Text = b.String()
	s.Env["PASTED"] = fakeTokens()["ghp"] // a map value is redacted too
	if s.Validate() == nil {
		t.Fatal("the spec with tokens was accepted")
	}
	r.RedactStrings(&s)
	if err := s.Validate(); err != nil {
		t.Fatalf("redacted spec refused: %v", err)
	}
	if s.Env["PASTED"] != Redacted || s.Env["GOFLAGS"] != "-trimpath" {
		t.Errorf("env after redaction = %v", s.Env)
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := NewRedactor("initial-secret-1")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 50 {
				r.Add(fmt.Sprintf("secret-%02d-%03d", i, j))
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				if got := r.Redact("x initial-secret-1 y"); got != "x [REDACTED] y" {
					t.Errorf("Redact = %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		s := fmt.Sprintf("secret-%02d-049", i)
		if got := r.Redact(s); got != Redacted {
			t.Errorf("%s not redacted after concurrent Add: %q", s, got)
		}
	}
}

func TestFindSecrets(t *testing.T) {
	tok := newGHS()
	e := validEvidence()
	e.Commands[1].OutputTail = "x " + tok
	e.Tests.Failures[0].Message = tok
	found := FindSecrets(&e)
	if len(found) != 2 || found[0].Field != "commands[1].output_tail" || found[1].Field != "tests.failures[0].message" {
		t.Fatalf("FindSecrets = %v", found)
	}
	for _, f := range found {
		if strings.Contains(f.Error(), tok[:20]) {
			t.Fatalf("FindSecrets echoes the token: %v", f)
		}
	}
	if got := FindSecrets(validEvidence()); got != nil {
		t.Fatalf("FindSecrets on clean evidence (by value) = %v", got)
	}
	if got := FindSecrets(nil); got != nil {
		t.Fatalf("FindSecrets(nil) = %v", got)
	}
}

func TestSecretKindNeverEchoes(t *testing.T) {
	for name, tok := range fakeTokens() {
		kind := SecretKind("x " + tok)
		if kind == "" {
			t.Errorf("%s: not recognised", name)
		}
		if strings.Contains(tok, kind) {
			t.Errorf("%s: kind %q is part of the token", name, kind)
		}
	}
	if k := SecretKind("nothing to see"); k != "" {
		t.Errorf("SecretKind = %q", k)
	}
}
