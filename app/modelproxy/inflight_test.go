package modelproxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
)

// countingBody counts the bytes read from it.
type countingBody struct {
	r    io.Reader
	read *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (countingBody) Close() error { return nil }

// With the session's one slot in this process taken by a request the
// provider holds, the next request of the same session gets 429 before a
// byte of its body is read; another session's goes on; and once the held
// one ends, the slot is free again.
func TestProxyGatesASessionsRequestsBeforeReadingTheirBodies(t *testing.T) {
	arrived, release := make(chan struct{}, 4), make(chan struct{})
	// The provider holds the first request it gets: the proxy forwards only
	// the headers a provider takes (contract.ModelRequestHeaders), so no
	// header of the test's could say which one to hold.
	var got atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
		first := got.Add(1) == 1
		arrived <- struct{}{}
		if first {
			<-release
		}
		_, _ = io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	t.Cleanup(upstream.Close)
	p := New(Options{Providers: providers{"a": {Kind: contract.ProviderKindAnthropic, BaseURL: upstream.URL, Key: "sk-test-0123456789"}}, MaxInFlight: 1})
	mux := http.NewServeMux()
	mux.HandleFunc(contract.PathEgressModel, func(w http.ResponseWriter, r *http.Request) {
		spec := contract.Spec{SessionID: r.Header.Get("X-Session"), Agent: contract.Agent{Preset: contract.PresetClaudeCode, Model: "m-1", Provider: "a"}}
		p.Serve(w, r, spec, NewBudget(0, 0), zerolog.Nop())
	})
	ask := func(session string, read *atomic.Int64) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath("a1", "a", "v1/messages"), nil)
		req.Body = countingBody{strings.NewReader(`{"model":"m-1","max_tokens":5}`), read}
		req.ContentLength = -1 // chunked: the proxy must read to know the size
		req.Header.Set("X-Session", session)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec
	}
	var heldRead, secondRead, otherRead, afterRead atomic.Int64
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- ask("s1", &heldRead) }()
	<-arrived // the held request is at the provider, its slot taken
	if rec := ask("s1", &secondRead); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || secondRead.Load() != 0 {
		t.Errorf("second request of s1: %d (Retry-After %q), %d body bytes read; want 429 before any", rec.Code, rec.Header().Get("Retry-After"), secondRead.Load())
	}
	if rec := ask("s2", &otherRead); rec.Code != http.StatusOK {
		t.Errorf("another session's request: %d %s", rec.Code, rec.Body)
	}
	<-arrived
	close(release)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("the held request: %d %s", rec.Code, rec.Body)
	}
	if rec := ask("s1", &afterRead); rec.Code != http.StatusOK {
		t.Errorf("after the held one ended: %d %s", rec.Code, rec.Body)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.inFlight) != 0 {
		t.Errorf("slots left taken: %v", p.inFlight)
	}
}

// A body of unknown length is read into a buffer that never grows past
// the cap plus one byte; one past the cap is refused.
func TestReadBodyNeverGrowsPastTheCap(t *testing.T) {
	const max = 1 << 20
	for _, tc := range []struct {
		size int
		ok   bool
	}{{0, true}, {100, true}, {max, true}, {max + 1, false}, {3 * max, false}} {
		req := httptest.NewRequest(http.MethodPost, "/", nil)
		req.Body = io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("a"), tc.size)))
		req.ContentLength = -1
		got, err := readBody(httptest.NewRecorder(), req, max)
		if tc.ok != (err == nil) || tc.ok && (len(got) != tc.size || cap(got) > max+1) {
			t.Errorf("size %d: %d bytes (cap %d), %v", tc.size, len(got), cap(got), err)
		}
	}
}

// settleSignal is a Meter that says when a request settled, and how.
type settleSignal struct {
	settled chan Usage
}

func (s settleSignal) Reserve(context.Context, int64) (Reservation, *Refusal) {
	return Reservation{Tokens: 9000}, nil
}
func (s settleSignal) Settle(_ context.Context, _ Reservation, u Usage) { s.settled <- u }

// An agent that hangs up once it has the stream's closing usage event,
// before the stream's last bytes, is charged what the provider reported,
// not its reservation; one that hangs up before that event is charged
// the reservation.
func TestHangingUpAfterTheUsageEventSettlesTheReportedUsage(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readTill string
		want     int64
	}{
		{"after the usage", "response.completed", 130},
		{"before the usage", "response.created", 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				_, _ = io.WriteString(w, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n")
				_ = rc.Flush()
				if tc.want == 9000 {
					// The agent hung up: the proxy gives up its request
					// here, and no usage ever arrives.
					<-r.Context().Done()
					return
				}
				_, _ = io.WriteString(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"usage\":{\"input_tokens\":100,\"output_tokens\":30,\"total_tokens\":130}}}\n\n")
				_ = rc.Flush()
				<-release // more the client never reads
				for range 64 {
					_, _ = io.WriteString(w, ": padding "+strings.Repeat("x", 4096)+"\n\n")
					_ = rc.Flush()
				}
			}))
			t.Cleanup(upstream.Close)
			p := New(Options{Providers: providers{"o": {Kind: contract.ProviderKindOpenAI, BaseURL: upstream.URL + "/v1", Key: "sk-test-0123456789"}}})
			meter := settleSignal{settled: make(chan Usage, 1)}
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.SetPathValue(contract.PathValueProvider, "o")
				r.SetPathValue(contract.PathValueRest, "responses")
				spec := contract.Spec{SessionID: "s1", Agent: contract.Agent{Preset: contract.PresetCodex, Model: "m-1", Provider: "o"}}
				p.Serve(w, r, spec, meter, zerolog.Nop())
			}))
			t.Cleanup(front.Close)
			resp, err := http.Post(front.URL, "application/json", strings.NewReader(`{"model":"m-1","input":"hi","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1)
			var seen strings.Builder
			for !strings.Contains(seen.String(), tc.readTill) {
				if _, err := resp.Body.Read(buf); err != nil {
					t.Fatalf("reading: %v after %q", err, seen.String())
				}
				seen.Write(buf)
			}
			resp.Body.Close() // hang up
			close(release)
			if got := <-meter.settled; got.TotalTokens != tc.want {
				t.Errorf("settled %+v, want %d total", got, tc.want)
			}
		})
	}
}
