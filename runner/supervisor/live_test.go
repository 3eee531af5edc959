package supervisor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
)

type chunkRecorder struct {
	mu     sync.Mutex
	chunks []contract.OutputChunk
	sent   chan contract.OutputChunk
	fail   bool
}

func (r *chunkRecorder) output(_ context.Context, c contract.OutputChunk) error {
	if err := c.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	r.chunks = append(r.chunks, c)
	fail := r.fail
	r.mu.Unlock()
	if r.sent != nil {
		r.sent <- c
	}
	if fail {
		return errors.New("HTTP 404")
	}
	return nil
}

func (r *chunkRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, c := range r.chunks {
		b.WriteString(c.Text)
	}
	return b.String()
}

// testLive streams with a ticker too slow to fire in a test: batches go
// out when full or at close.
func testLive(rec *chunkRecorder, red *contract.Redactor, seq *int64) *liveOutput {
	return startLive(context.Background(), rec, red, contract.PhaseAgent, "agent", seq, time.Now, time.Minute, time.Hour, zerolog.Nop())
}

func TestLiveOutputRedactsSecretsSplitAcrossWrites(t *testing.T) {
	token := "ghs_" + strings.Repeat("A1b2", 9)
	session := "sess-token-0123456789abcdef"
	red := contract.NewRedactor(session)
	rec := &chunkRecorder{}
	var seq int64
	l := testLive(rec, red, &seq)
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretkeybody1\nMIIEsecretkeybody2\n-----END RSA PRIVATE KEY-----\n"
	for _, w := range []string{
		"line one\n", "the token is " + token[:10], token[10:] + " ok\n",
		"session " + session[:5], session[5:] + "\n",
		key[:40], key[40:70], key[70:], "after the key\n", "no newline at the end",
	} {
		if _, err := l.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	got := rec.text()
	for _, secret := range []string{token, session, "secretkeybody1", "secretkeybody2", "MIIE"} {
		if strings.Contains(got, secret) {
			t.Fatalf("live output carries %q:\n%s", secret, got)
		}
	}
	for _, want := range []string{"line one\n", "the token is " + contract.Redacted + " ok\n", "session " + contract.Redacted + "\n", "after the key\n", "no newline at the end"} {
		if !strings.Contains(got, want) {
			t.Fatalf("live output lacks %q:\n%s", want, got)
		}
	}
	if seq != int64(len(rec.chunks)) || rec.chunks[0].Seq != 1 {
		t.Fatalf("seq %d over %d chunks, first %d", seq, len(rec.chunks), rec.chunks[0].Seq)
	}
}

// A key whose END line arrives in a later batch: the batches between are
// dropped, not sent in the clear.
func TestLiveOutputDropsTheRestOfAKeyAcrossBatches(t *testing.T) {
	rec := &chunkRecorder{sent: make(chan contract.OutputChunk, 16)}
	var seq int64
	l := testLive(rec, contract.NewRedactor(), &seq)
	write := func(s string) {
		if _, err := l.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// Each write fills a batch, so each is sent on its own.
	pad := strings.Repeat("x", contract.MaxOutputChunkTextBytes) + "\n"
	write("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEfirst\n" + pad)
	first := <-rec.sent
	write("b3BlbnNzaC1rZXktdjEsecond\n" + pad)
	write("-----END OPENSSH PRIVATE KEY-----\nvisible again\n")
	l.close()
	got := rec.text()
	if strings.Contains(got, "b3BlbnNzaC1rZXktdjE") {
		t.Fatalf("the key's body was sent: %.200s", got)
	}
	if !strings.HasPrefix(first.Text, contract.Redacted) || !strings.Contains(got, "visible again\n") {
		t.Fatalf("first chunk %.80q; all %.80q", first.Text, got)
	}
}

func TestLiveOutputBatchesByLineAndSize(t *testing.T) {
	rec := &chunkRecorder{sent: make(chan contract.OutputChunk, 16)}
	var seq int64
	l := testLive(rec, contract.NewRedactor(), &seq)
	big := strings.Repeat("y", contract.MaxOutputChunkTextBytes-10)
	// A full batch goes at once, up to its last newline; the rest waits.
	if _, err := l.Write([]byte(big + "\nhalf a line\n")); err != nil {
		t.Fatal(err)
	}
	c := <-rec.sent
	if c.Text != big+"\n" {
		t.Fatalf("first batch is %d bytes ending %q, want the whole lines only", len(c.Text), c.Text[max(0, len(c.Text)-12):])
	}
	l.close()
	if got := rec.text(); got != big+"\nhalf a line\n" {
		t.Fatalf("all output: %d bytes", len(got))
	}
	for _, c := range rec.chunks {
		if len(c.Text) > contract.MaxOutputChunkTextBytes {
			t.Fatalf("chunk of %d bytes", len(c.Text))
		}
	}
}

func TestLiveOutputStopsWhenRefusedAndCleansText(t *testing.T) {
	rec := &chunkRecorder{fail: true}
	var seq int64
	l := testLive(rec, contract.NewRedactor(), &seq)
	for range 3 {
		if _, err := l.Write([]byte(strings.Repeat("z\x00\xff", contract.MaxOutputChunkTextBytes/2) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	if len(rec.chunks) != 1 {
		t.Fatalf("%d chunks sent after a refusal, want 1", len(rec.chunks))
	}
	if strings.ContainsAny(rec.chunks[0].Text, "\x00") || !strings.Contains(rec.chunks[0].Text, "\uFFFD") {
		t.Fatalf("chunk not cleaned: %.40q", rec.chunks[0].Text)
	}
}
