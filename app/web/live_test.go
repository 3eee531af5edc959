package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
	"github.com/inspecthq/inspect/session"
)

// fakeLive is a session and its output, changed by the test while a
// stream reads it.
type fakeLive struct {
	mu     sync.Mutex
	sess   store.Session
	chunks []store.OutputChunk
}

func (f *fakeLive) GetSession(_ context.Context, id string) (store.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != f.sess.ID {
		return store.Session{}, store.ErrNotFound
	}
	return f.sess, nil
}

func (f *fakeLive) OutputAfter(_ context.Context, _ string, after int64, limit int) ([]store.OutputChunk, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.OutputChunk
	for _, c := range f.chunks {
		if c.ID > after && len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeLive) add(text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chunks = append(f.chunks, store.OutputChunk{ID: int64(len(f.chunks) + 1), Phase: "agent", Command: "agent", Text: text})
}

func (f *fakeLive) set(state session.State, outcome session.Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sess.Outcome = outcome
	f.sess = store.Fixture(state, f.sess)
}

type sseEvent struct{ id, name, data string }

// readEvent reads the next event; io.EOF when the stream ended.
func readEvent(t *testing.T, r *bufio.Reader) (sseEvent, error) {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				return ev, nil
			}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if ev.data != "" {
				t.Fatalf("an event with two data lines: %q", ev.data)
			}
			ev.data = line[6:]
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

func openLive(t *testing.T, f *fakeLive, lastID string) (*http.Response, *bufio.Reader) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := streamLive(r.Context(), w, f, "s1", lastEventID(r), time.Millisecond, time.Hour, nil); err != nil {
			t.Errorf("stream: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() }) // the test's own connection
	return resp, bufio.NewReader(resp.Body)
}

func lastEventID(r *http.Request) int64 {
	var n int64
	_, _ = fmt.Sscan(r.Header.Get("Last-Event-ID"), &n) // absent: from the start
	return n
}

func TestLiveStreamResumesSendsNewOutputAndStateAndEndsWhenDone(t *testing.T) {
	f := &fakeLive{sess: store.Fixture(session.Running, store.Session{ID: "s1"})}
	f.add("seen before\n")
	f.add("first line\n")
	resp, r := openLive(t, f, "1")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	next := func(want string) sseEvent {
		t.Helper()
		ev, err := readEvent(t, r)
		if err != nil || ev.name != want {
			t.Fatalf("event %+v, %v; want %s", ev, err, want)
		}
		return ev
	}
	text := func(ev sseEvent) string {
		t.Helper()
		var o liveOutputEvent
		if err := json.Unmarshal([]byte(ev.data), &o); err != nil {
			t.Fatal(err)
		}
		return o.Text
	}
	if ev := next("output"); ev.id != "2" || text(ev) != "first line\n" {
		t.Fatalf("after Last-Event-ID 1: %+v", ev)
	}
	if ev := next("state"); ev.data != `{"state":"running","outcome":"","reason":""}` {
		t.Fatalf("state %s", ev.data)
	}
	// Text that would end an event, or be markup, arrives as it was.
	hostile := "two\n\ndata: forged\nevent: done\n</pre><script>alert(1)</script>\r\n"
	f.add(hostile)
	if ev := next("output"); ev.id != "3" || text(ev) != hostile {
		t.Fatalf("hostile output: %+v", ev)
	}
	f.add("last words\n")
	f.set(session.Done, session.Changed)
	if ev := next("output"); ev.id != "4" || text(ev) != "last words\n" {
		t.Fatalf("output before done: %+v", ev)
	}
	if ev := next("state"); ev.data != `{"state":"done","outcome":"changed","reason":""}` {
		t.Fatalf("state %s", ev.data)
	}
	next("done")
	if ev, err := readEvent(t, r); err != io.EOF {
		t.Fatalf("after done: %+v, %v", ev, err)
	}
}

func TestLiveStreamOfADoneSessionSendsItsWholeTailInBatches(t *testing.T) {
	f := &fakeLive{sess: store.Fixture(session.Done, store.Session{ID: "s1", Outcome: session.NoChange})}
	for i := range liveBatch*2 + 3 {
		f.add(fmt.Sprintf("line %d\n", i))
	}
	_, r := openLive(t, f, "")
	var n int
	for {
		ev, err := readEvent(t, r)
		if err != nil {
			t.Fatalf("after %d outputs: %v", n, err)
		}
		if ev.name != "output" {
			if n != liveBatch*2+3 || ev.name != "state" {
				t.Fatalf("%s after %d outputs", ev.name, n)
			}
			break
		}
		n++
		if ev.id != fmt.Sprint(n) {
			t.Fatalf("output %d has id %s", n, ev.id)
		}
	}
	if ev, err := readEvent(t, r); err != nil || ev.name != "done" {
		t.Fatalf("%+v, %v", ev, err)
	}
}

// realOutput reads a real store's output for a session the benchmark
// says is done.
type realOutput struct {
	*store.Store
	sess store.Session
}

func (r realOutput) GetSession(context.Context, string) (store.Session, error) { return r.sess, nil }

type discardFlusher struct {
	h     http.Header
	bytes int64
}

func (d *discardFlusher) Header() http.Header         { return d.h }
func (d *discardFlusher) WriteHeader(int)             {}
func (d *discardFlusher) Flush()                      {}
func (d *discardFlusher) Write(p []byte) (int, error) { d.bytes += int64(len(p)); return len(p), nil }

// BenchmarkLiveStreamPerLine is the server's time per streamed output
// line: reading the chunks from SQLite, encoding and writing them, with
// each chunk one line (the worst case: the supervisor batches lines).
// BENCHMARKS.md: under 1 ms per line.
func BenchmarkLiveStreamPerLine(b *testing.B) {
	st := storetest.Open(b, "sqlite")
	ctx := context.Background()
	const lines = 2000
	line := strings.Repeat("ok  \tgithub.com/acme/widgets/pkg\t0.012s ", 2) + "\n"
	for i := range lines {
		if _, err := st.AppendOutput(ctx, store.OutputChunk{SessionID: "s1", AttemptID: "a1", Seq: int64(i + 1), Phase: "verify",
			Command: "test", Text: line, CreatedAt: time.Unix(0, 0)}, 1<<40); err != nil {
			b.Fatal(err)
		}
	}
	src := realOutput{Store: st, sess: store.Fixture(session.Done, store.Session{ID: "s1"})}
	b.ResetTimer()
	for b.Loop() {
		w := &discardFlusher{h: http.Header{}}
		if err := streamLive(ctx, w, src, "s1", 0, time.Hour, time.Hour, nil); err != nil {
			b.Fatal(err)
		}
		if w.bytes < lines*int64(len(line)) {
			b.Fatalf("streamed %d bytes", w.bytes)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*lines), "ns/line")
}

// BenchmarkLiveStreamIdlePoll is one poll of a stream that has nothing
// new to send: the session's row and an empty read of its output, from
// SQLite. A stream pays it every livePoll whatever the output.
func BenchmarkLiveStreamIdlePoll(b *testing.B) {
	st := storetest.Open(b, "sqlite")
	ctx := context.Background()
	for i := range 100 {
		if _, err := st.AppendOutput(ctx, store.OutputChunk{SessionID: "s1", AttemptID: "a1", Seq: int64(i + 1), Phase: "agent",
			Command: "agent", Text: "line\n", CreatedAt: time.Unix(0, 0)}, 1<<40); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := st.GetSession(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
			b.Fatal(err) // no such session row here: the same indexed read
		}
		if out, err := st.OutputAfter(ctx, "s1", 100, liveBatch); err != nil || len(out) != 0 {
			b.Fatal(out, err)
		}
	}
}

// openLive opens a session's live stream as the world's browser, signed
// in or not. A stream that never ends fails the test at its deadline.
func (w *world) openLive(t *testing.T, sessionID string) (*http.Response, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.srv.URL+"/sessions/"+sessionID+"/live", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() }) // the test's own connection
	return resp, bufio.NewReader(resp.Body)
}

// liveStatus is the status a new live stream of the session answers, its
// redirect not followed (signed out: to the sign-in), and the body of any
// answer but a stream's, which is left unread.
func (w *world) liveStatus(t *testing.T, sessionID string) (int, string) {
	t.Helper()
	noRedirect := &http.Client{Jar: w.http.Jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(w.srv.URL + "/sessions/" + sessionID + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	body, _ := io.ReadAll(resp.Body) // a short page; a read error shows as a wrong page
	return resp.StatusCode, string(body)
}

// untilEnded reads the stream's events to its end and says how it ended:
// the reason of its "ended" event, and the error that followed it
// (io.EOF when the server ended the stream).
func untilEnded(t *testing.T, r *bufio.Reader) (reason string, err error) {
	t.Helper()
	for {
		ev, err := readEvent(t, r)
		if err != nil {
			return reason, err
		}
		if ev.name == "ended" {
			var e liveEndedEvent
			if jerr := json.Unmarshal([]byte(ev.data), &e); jerr != nil {
				t.Fatalf("ended: %s: %v", ev.data, jerr)
			}
			reason = e.Reason
		}
	}
}

// A live stream is authorised again at least every web.permission_cache,
// and ends when the sign-in or the repository's read is gone (decision
// 0060, in part superseding 0037's promise for pages only). The class
// closed: an authorisation that outlives what it was given for, checked
// once at the start of a long-lived response. The review showed sign-out;
// these rows try the other ways it goes: sign-out on another replica (or
// GitHub's revocation, which forgets the user the same way), and the
// repository's read taken away at GitHub. Time is the test's clock; the
// stream polls every 2 ms of real time and ends within a poll once due.
func TestLiveStreamEndsWhenTheSignInOrTheReadGoes(t *testing.T) {
	for _, c := range []struct {
		name string
		take func(t *testing.T, w *world)
		// wait is how far the clock moves after take: the permission
		// cache's lifetime, when nothing on this replica knows.
		wait time.Duration
		// reason is the ended event's exact reason: each loss says
		// which it was.
		reason string
	}{
		{"sign-out on this replica", func(t *testing.T, w *world) {
			_, page := w.get(t, "/sessions")
			resp, err := w.http.PostForm(w.srv.URL+"/auth/logout", url.Values{"csrf": {between(page, `name="csrf" value="`, `"`)}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("sign-out: %d", resp.StatusCode)
			}
		}, 0, liveSignedOut},
		{"sign-out on another replica", func(t *testing.T, w *world) {
			if err := w.st.ForgetWebUser(context.Background(), 5000); err != nil {
				t.Fatal(err)
			}
		}, time.Minute, liveSignedOut},
		{"the repository's read taken away", func(t *testing.T, w *world) {
			w.gh.SetPermission("acme", "widgets", "alice", "none")
		}, time.Minute, liveUnreadable},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorldWith(t, func(o *Options) { o.LivePoll = 2 * time.Millisecond })
			w.signIn(t)
			resp, r := w.openLive(t, "visible-1")
			if ev, err := readEvent(t, r); resp.StatusCode != http.StatusOK || err != nil || ev.name != "state" {
				t.Fatalf("the stream began with %d %+v, %v", resp.StatusCode, ev, err)
			}
			c.take(t, w)
			w.clock.Advance(c.wait)
			reason, err := untilEnded(t, r)
			if err != io.EOF || reason != c.reason {
				t.Fatalf("the stream ended with %q, %v; want an ended event saying %q, and its end", reason, err, c.reason)
			}
			if code, _ := w.liveStatus(t, "visible-1"); code == http.StatusOK {
				t.Errorf("a new stream after the loss: %d", code)
			}
		})
	}
}

// One user holds at most web.max_live_streams live streams on a replica;
// the next is refused with 429 and says why, and a stream that ends gives
// its place back. The class closed: work one request makes the server do
// for as long as it likes (a store poll every 200 ms), multiplied without
// bound by one user.
func TestLiveStreamsAreCappedPerUser(t *testing.T) {
	w := newWorldWith(t, func(o *Options) { o.LivePoll = 2 * time.Millisecond; o.MaxLiveStreams = 2 })
	w.signIn(t)
	var open []*bufio.Reader
	for range 2 {
		resp, r := w.openLive(t, "visible-1")
		if ev, err := readEvent(t, r); resp.StatusCode != http.StatusOK || err != nil || ev.name != "state" {
			t.Fatalf("stream %d began with %d %+v, %v", len(open)+1, resp.StatusCode, ev, err)
		}
		open = append(open, r)
	}
	if code, body := w.liveStatus(t, "visible-1"); code != http.StatusTooManyRequests || !strings.Contains(body, "2 live views open") {
		t.Fatalf("the third stream: %d\n%s", code, body)
	}
	// The session ends: both streams send done and end, and give their
	// places back before their responses end.
	if _, err := w.st.MutateSession(context.Background(), "visible-1", w.clock.Now(), func(s *store.Session) error {
		return s.End(session.NoChange, "", "")
	}); err != nil {
		t.Fatal(err)
	}
	for i, r := range open {
		if _, err := untilEnded(t, r); err != io.EOF {
			t.Fatalf("stream %d: %v", i+1, err)
		}
	}
	if code, _ := w.liveStatus(t, "visible-1"); code != http.StatusOK {
		t.Errorf("a stream after the others ended: %d", code)
	}
}
