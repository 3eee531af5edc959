package supervisor

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
)

// outputSender posts one live output chunk to the app (channel.output).
type outputSender interface {
	output(ctx context.Context, c contract.OutputChunk) error
}

// liveOutput streams a running command's output to the app for the
// dashboard (contract.PathOutput), redacted before it leaves: it batches
// what the command writes and, every interval or when a batch reaches
// contract.MaxOutputChunkTextBytes, redacts the batch whole and sends it.
//
// The Redactor recognises a secret only whole, so a batch ends at the last
// newline it holds (tokens never span lines); a line longer than a batch is
// cut at its last blank. A PEM private key spans lines: when a batch ends
// inside one, the Redactor has replaced it to the batch's end, and the
// following batches are dropped up to its END line.
//
// Sending is best effort and never blocks the command: Write only appends.
// What the app refuses ends the stream (the rest still reaches the
// evidence's output tail); pending bytes beyond maxLivePending are dropped
// from the front, as the app keeps only a tail anyway.
type liveOutput struct {
	ctx      context.Context // the session's, without its cancellation: the last chunk goes out after the command ends
	send     outputSender
	red      *contract.Redactor
	phase    contract.Phase
	command  string
	seq      *int64 // the attempt's chunk counter, shared by its commands
	now      func() time.Time
	timeout  time.Duration
	interval time.Duration
	log      zerolog.Logger

	mu      sync.Mutex
	pending []byte
	skipped bool // bytes were dropped from pending's front

	inKey   bool // the last batch ended inside a PEM private key
	stopped bool // the app refused a chunk: send no more
	kick    chan struct{}
	done    chan struct{}
	ended   chan struct{}
}

// maxLivePending bounds what waits to be sent while a send is slow.
const maxLivePending = 4 * contract.MaxOutputChunkTextBytes

var (
	pemBegin = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`)
	pemEnd   = regexp.MustCompile(`-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`)
)

// startLive starts streaming; stop it with close, which sends the rest.
func startLive(ctx context.Context, send outputSender, red *contract.Redactor, phase contract.Phase, command string, seq *int64,
	now func() time.Time, timeout, interval time.Duration, log zerolog.Logger) *liveOutput {
	l := &liveOutput{ctx: context.WithoutCancel(ctx), send: send, red: red, phase: phase, command: contract.CleanProgressMessage(command), seq: seq, now: now,
		timeout: timeout, interval: interval, log: log,
		kick: make(chan struct{}, 1), done: make(chan struct{}), ended: make(chan struct{})}
	if l.command == "" {
		l.command = string(phase)
	}
	go l.run()
	return l
}

func (l *liveOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.pending = append(l.pending, p...)
	if over := len(l.pending) - maxLivePending; over > 0 {
		l.pending = append(l.pending[:0], l.pending[over:]...)
		l.skipped = true
	}
	full := len(l.pending) >= contract.MaxOutputChunkTextBytes
	l.mu.Unlock()
	if full {
		select {
		case l.kick <- struct{}{}:
		default: // a flush is already due
		}
	}
	return len(p), nil
}

// close sends what is left and waits for the stream to end.
func (l *liveOutput) close() {
	close(l.done)
	<-l.ended
}

func (l *liveOutput) run() {
	defer close(l.ended)
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			l.flush(true)
			return
		case <-t.C:
			l.flush(false)
		case <-l.kick:
			l.flush(false)
		}
	}
}

// take removes the next batch from pending: at most a chunk's worth,
// ending at its last newline, or at its last blank when a line is longer
// than that. Once the command has ended (final) a partial line goes too.
func (l *liveOutput) take(final bool) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	window := l.pending[:min(len(l.pending), contract.MaxOutputChunkTextBytes)]
	n := bytes.LastIndexByte(window, '\n') + 1
	if n == 0 {
		switch {
		case len(l.pending) >= contract.MaxOutputChunkTextBytes:
			if n = bytes.LastIndexAny(window, " \t") + 1; n == 0 {
				n = len(window)
			}
		case final:
			n = len(window)
		}
	}
	batch := bytes.Clone(l.pending[:n])
	l.pending = append(l.pending[:0], l.pending[n:]...)
	skipped := l.skipped
	l.skipped = false
	return batch, skipped
}

func (l *liveOutput) flush(final bool) {
	for {
		batch, skipped := l.take(final)
		if len(batch) == 0 || l.stopped {
			return
		}
		text := l.redact(batch)
		if skipped {
			text = "…\n" + text
		}
		for text != "" && !l.stopped {
			part := text
			if len(part) > contract.MaxOutputChunkTextBytes {
				part = part[:contract.MaxOutputChunkTextBytes]
				for !utf8.ValidString(part) { // cut at a character's start
					part = part[:len(part)-1]
				}
			}
			text = text[len(part):]
			l.post(part)
		}
		if !final && !l.due() {
			return
		}
	}
}

// due reports whether a full batch is waiting already.
func (l *liveOutput) due() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) >= contract.MaxOutputChunkTextBytes
}

// redact makes a batch safe to send: secrets replaced, the rest of a PEM
// key cut off a previous batch dropped, valid UTF-8 without NUL.
func (l *liveOutput) redact(b []byte) string {
	if l.inKey {
		loc := pemEnd.FindIndex(b)
		if loc == nil {
			return "" // still inside the key
		}
		b = b[loc[1]:]
		l.inKey = false
	}
	if begins := pemBegin.FindAllIndex(b, -1); len(begins) > 0 {
		last := begins[len(begins)-1][0]
		l.inKey = pemEnd.FindIndex(b[last:]) == nil
	}
	s := strings.ToValidUTF8(string(l.red.RedactBytes(b)), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func (l *liveOutput) post(text string) {
	if text == "" {
		return
	}
	*l.seq++
	c := contract.OutputChunk{Seq: *l.seq, Time: l.now(), Phase: l.phase, Command: l.command, Text: text}
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	defer cancel()
	if err := l.send.output(ctx, c); err != nil {
		l.stopped = true
		l.log.Warn().Str("error", l.red.Redact(err.Error())).Str("command", l.command).Msg("live output not delivered; the rest of this command's goes only to the evidence")
	}
}
