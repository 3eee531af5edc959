package fakegithub

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every request waits the latency, and requests in flight together wait
// side by side, as on GitHub: eight at once take about one latency, not
// eight.
func TestLatencyDelaysEveryRequestAndOverlaps(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	tok, _, err := jwtClientAt(t, s, time.Now()).Apps.CreateInstallationToken(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	gh := tokenClient(t, s, tok.GetToken())
	const latency = 500 * time.Millisecond
	const n = 8
	s.SetLatency(latency)
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			_, _, errs[i] = gh.Repositories.Get(ctx, "acme", "widgets")
			took[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	all := time.Since(start)
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if took[i] < latency {
			t.Errorf("request %d answered after %v, before the latency of %v", i, took[i], latency)
		}
	}
	if all >= n*latency {
		t.Errorf("%d requests at once took %v: they waited one after another, not side by side", n, all)
	}
	s.SetLatency(0)
	t0 := time.Now()
	if _, _, err := gh.Repositories.Get(ctx, "acme", "widgets"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took >= latency {
		t.Errorf("with no latency a request took %v", took)
	}
}

// A request is stamped (Request.At) when it arrives, before its body is
// read: a slow upload does not move its time.
func TestRequestIsStampedOnArrival(t *testing.T) {
	s := newServer(t)
	s.AddIssue("acme", "widgets", Issue{Number: 1})
	arrival := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	stamped := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	now := arrival
	s.SetClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		once.Do(func() { close(stamped) })
		return now
	})
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, s.APIURL()+"repos/acme/widgets/issues/1/comments", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	timeout := time.NewTimer(30 * time.Second) // a failure's bound, not a wait
	defer timeout.Stop()
	select {
	case <-stamped:
	case <-timeout.C:
		t.Fatal("the request was not stamped before its body came")
	}
	mu.Lock()
	now = arrival.Add(time.Minute)
	mu.Unlock()
	if _, err := io.Copy(pw, strings.NewReader(`{"body":"x"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reqs := s.RequestsMatching(http.MethodPost, "/repos/acme/widgets/issues/1/comments")
	if len(reqs) != 1 || !reqs[0].At.Equal(arrival) {
		t.Fatalf("recorded %+v, want one request at %v", reqs, arrival)
	}
}
