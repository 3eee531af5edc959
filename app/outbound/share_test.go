package outbound

import (
	"net/http"
	"sync"
	"testing"
)

// The in-flight cap follows the replica's share: lowered while requests
// are under way, no new one starts until those are under it; raised while
// requests wait, they start at once.
func TestMaxConcurrentFollowsTheShare(t *testing.T) {
	const callers = 4
	arrived := make(chan struct{}, callers)
	release := make(chan struct{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll() // a failed check must not leave the server's handlers parked
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		ok(w, r)
	})
	l := srv.limiter(Config{MaxConcurrent: 4})
	l.SetMaxConcurrent(2) // another replica joined: half of 4
	full := make(chan struct{}, callers)
	l.testHookFull = func() { full <- struct{}{} }
	hc := &http.Client{Transport: l.Transport(9, nil)}
	wg := getConcurrently(t, hc, srv.URL, callers)
	for range 2 {
		<-arrived
	}
	for range callers - 2 {
		<-full // the other two wait for a place
	}
	if got := srv.count(); got != 2 || l.sem.inUse() != 2 {
		t.Fatalf("%d places taken, %d requests at the server; want the share of 2", l.sem.inUse(), got)
	}
	l.SetMaxConcurrent(3) // the other replica left, but not all the way back
	<-arrived
	if got := l.sem.inUse(); got != 3 {
		t.Fatalf("%d places taken after the share grew to 3", got)
	}
	l.SetMaxConcurrent(0) // never below one
	if l.sem.limit != 1 {
		t.Errorf("a share of 0 set the limit to %d, want 1", l.sem.limit) // read unlocked: nothing else sets it
	}
	releaseAll()
	wg.Wait()
	if got := l.sem.inUse(); got != 0 {
		t.Fatalf("%d places still taken after every body was read", got)
	}
}
