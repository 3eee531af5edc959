package registryproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/internal/fakegoproxy"
	"github.com/inspecthq/inspect/internal/fakepypi"
)

// The class closed (issue 33, decision 0059): memory that grows with the
// agent's wishes. Nothing capped the registry requests an attempt had in
// flight, each holding an upstream connection and its buffers; now they
// are capped per attempt and per process, and those over a cap wait their
// turn, in order, rather than being refused.

func TestWaitingRequestsAreServedInTheOrderTheyCame(t *testing.T) {
	cases := []struct {
		name                   string
		perAttempt, perProcess int
		// other is the attempt holding the process's one turn first,
		// when the cap that makes them wait is the process's.
		other string
	}{
		{name: "over the attempt's cap", perAttempt: 1, perProcess: 10},
		{name: "over the process's cap, another attempt holding it", perAttempt: 10, perProcess: 1, other: "a2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTurns(c.perAttempt, c.perProcess)
			queued := make(chan struct{}, 3)
			tr.queued = queued
			first := "a1"
			if c.other != "" {
				first = c.other
			}
			if err := tr.wait(context.Background(), first); err != nil {
				t.Fatal(err)
			}
			served := make(chan string, 4)
			var wg sync.WaitGroup
			cancelC, cancel := context.WithCancel(context.Background())
			for i, who := range []string{"b", "c", "d"} {
				ctx := context.Background()
				if who == "c" {
					ctx = cancelC
				}
				wg.Go(func() {
					if err := tr.wait(ctx, "a1"); err != nil {
						served <- who + ": " + err.Error()
						return
					}
					served <- who
				})
				// Each queues before the next is started: their order is
				// the order they came.
				<-queued
				if _, aw, _, pw := tr.inFlight("a1"); aw+pw != i+1 {
					t.Fatalf("%s queued: %d waiting, want %d", who, aw+pw, i+1)
				}
			}
			// c gives up waiting: it is told so, holding nothing, and d
			// keeps its place behind b.
			cancel()
			if got := <-served; got != "c: "+context.Canceled.Error() {
				t.Fatalf("served %q, want c's wait ended by its context", got)
			}
			tr.done(first)
			if got := <-served; got != "b" {
				t.Fatalf("served %q first, want b, which came first", got)
			}
			tr.done("a1")
			if got := <-served; got != "d" {
				t.Fatalf("served %q, want d", got)
			}
			tr.done("a1")
			wg.Wait()
			if ah, aw, ph, pw := tr.inFlight("a1"); ah+aw+ph+pw != 0 || len(tr.attempts) != 0 {
				t.Fatalf("after all: attempt %d held %d waiting, process %d held %d waiting, %d attempts kept; want none", ah, aw, ph, pw, len(tr.attempts))
			}
		})
	}
}

// gatedUpstream is an upstream whose answers wait until the test lets
// each go, counting the requests it holds, per path.
type gatedUpstream struct {
	next    http.Handler
	release chan struct{}
	// arrived is told of each request as it arrives.
	arrivedC chan struct{}

	mu      sync.Mutex
	holding map[string]int
	most    map[string]int
	arrived int
}

func (g *gatedUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.holding[r.URL.Path]++
	g.most[r.URL.Path] = max(g.most[r.URL.Path], g.holding[r.URL.Path])
	g.arrived++
	g.mu.Unlock()
	g.arrivedC <- struct{}{}
	select {
	case <-g.release:
	case <-r.Context().Done():
	}
	g.next.ServeHTTP(w, r)
	g.mu.Lock()
	g.holding[r.URL.Path]--
	g.mu.Unlock()
}

func (g *gatedUpstream) counts() (arrived int, most map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := map[string]int{}
	for k, v := range g.most {
		m[k] = v
	}
	return g.arrived, m
}

// Variants the review did not try: a PyPI project page (HTML, rewritten)
// and a Go module's @v/list (text, not rewritten), from two attempts at
// once through one proxy.
func TestRegistryRequestsOverTheCapsWaitTheirTurnAndAllComplete(t *testing.T) {
	idx := fakepypi.New()
	whl, err := fakepypi.Wheel{Name: "demo-app", Version: "1.0", Source: "X = 1\n"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Add(whl); err != nil {
		t.Fatal(err)
	}
	mod := fakegoproxy.Module{Path: "fake.test/alpha", Version: "v1.0.0", Files: map[string]string{"go.mod": fakegoproxy.GoMod("fake.test/alpha")}}
	goUp := fakegoproxy.New(t, fakegoproxy.Options{Modules: []fakegoproxy.Module{mod}})
	gate := &gatedUpstream{release: make(chan struct{}), arrivedC: make(chan struct{}, 8), holding: map[string]int{}, most: map[string]int{}}
	mux := http.NewServeMux()
	mux.Handle("/simple/", idx)
	mux.Handle("/fake.test/", goUp.Handler())
	gate.next = mux
	up := httptest.NewServer(gate)
	t.Cleanup(up.Close)

	regs := upstreams{"pypi": {Kind: "pypi", URL: up.URL}, "go": {Kind: "goproxy", URL: up.URL}}
	allowed := []contract.Registry{{Name: "pypi", Kind: "pypi", Phases: goSetup}, {Name: "go", Kind: "goproxy", Phases: goSetup}}
	const perAttempt, perProcess = 2, 3
	p := New(Options{Upstreams: regs, MaxInFlightPerAttempt: perAttempt, MaxInFlight: perProcess})
	queued := make(chan struct{}, 8)
	p.turns.queued = queued
	route := func(attempt string) *httptest.Server {
		m := http.NewServeMux()
		m.HandleFunc(contract.PathEgressRegistry, func(w http.ResponseWriter, req *http.Request) {
			p.Serve(w, req, attempt, allowed, zerolog.New(zerolog.NewTestWriter(t)))
		})
		s := httptest.NewServer(m)
		t.Cleanup(s.Close)
		return s
	}
	a1, a2 := route("a1"), route("a2")

	type result struct {
		status int
		body   string
		err    error
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	ask := func(srv *httptest.Server, attempt, name, rest string) {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + contract.EgressRegistryPath(attempt, name, rest))
			if err != nil {
				results <- result{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			results <- result{status: resp.StatusCode, body: string(body), err: err}
		})
	}
	// Five of a1's requests: two reach the upstream, three wait for
	// a1's turns.
	for i := range 5 {
		ask(a1, "a1", "pypi", "simple/demo-app/")
		if i < perAttempt {
			<-gate.arrivedC
		} else {
			<-queued
		}
	}
	// a2's go on past a1's waiting ones, to the process's third turn;
	// its second waits for the process.
	ask(a2, "a2", "go", "fake.test/alpha/@v/list")
	<-gate.arrivedC
	ask(a2, "a2", "go", "fake.test/alpha/@v/list")
	<-queued
	a1h, a1w, ph, pw := p.turns.inFlight("a1")
	a2h, a2w, _, _ := p.turns.inFlight("a2")
	if a1h != 2 || a1w != 3 || a2h != 2 || a2w != 0 || ph != 3 || pw != 1 {
		t.Fatalf("a1 %d held %d waiting, a2 %d held %d waiting, the process %d held %d waiting; want 2 3, 2 0, 3 1", a1h, a1w, a2h, a2w, ph, pw)
	}
	if n, _ := gate.counts(); n != 3 {
		t.Fatalf("%d at the upstream, want 3", n)
	}

	// Let the upstream answer, one at a time: each answer lets one
	// waiting request through, and every request is served.
	for range 7 {
		gate.release <- struct{}{}
	}
	wg.Wait()
	close(results)
	var pages, lists int
	for r := range results {
		switch {
		case r.err != nil || r.status != http.StatusOK:
			t.Errorf("a request was answered %d %q (%v); want every one served once its turn came", r.status, r.body, r.err)
		case strings.Contains(r.body, "<a href="):
			// The index's files are under its own URL's files/, which the
			// proxy serves under its own files/.
			if !strings.Contains(r.body, contract.RegistryBaseURL("pypi")+"files/files/demo-app/") || strings.Contains(r.body, up.URL+"/files/") {
				t.Errorf("page %q: its links are not pointed at the proxy", r.body)
			}
			pages++
		case r.body == "v1.0.0\n":
			lists++
		default:
			t.Errorf("unexpected body %q", r.body)
		}
	}
	if pages != 5 || lists != 2 {
		t.Fatalf("served %d pages and %d lists, want 5 and 2", pages, lists)
	}
	_, most := gate.counts()
	if most["/simple/demo-app/"] > perAttempt || most["/fake.test/alpha/@v/list"] > perAttempt {
		t.Fatalf("the upstream held %v at once, want at most %d per attempt", most, perAttempt)
	}
	if ah, aw, ph, pw := p.turns.inFlight("a1"); ah+aw+ph+pw != 0 {
		t.Fatalf("turns still held or waited for: %d %d %d %d", ah, aw, ph, pw)
	}
}

// A request whose client goes away while it waits ends holding nothing.
func TestARequestThatEndsWhileWaitingHoldsNoTurn(t *testing.T) {
	p := New(Options{Upstreams: upstreams{}, MaxInFlightPerAttempt: 1, MaxInFlight: 1})
	queued := make(chan struct{}, 1)
	p.turns.queued = queued
	if err := p.turns.wait(context.Background(), "a1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- p.turns.wait(ctx, "a1") }()
	<-queued
	if _, aw, _, _ := p.turns.inFlight("a1"); aw != 1 {
		t.Fatalf("%d waiting, want the second", aw)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait: %v, want the context's end", err)
	}
	p.turns.done("a1")
	if ah, aw, ph, pw := p.turns.inFlight("a1"); ah+aw+ph+pw != 0 {
		t.Fatalf("turns left: %d %d %d %d", ah, aw, ph, pw)
	}
}
