package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/internal/fakeclock"
)

func redelivery(interval time.Duration) config.Redelivery {
	return config.Redelivery{Interval: interval, Window: 24 * time.Hour, MaxPerGUID: 2}
}

// appClientFunc is an App client that cannot be had; it calls f when asked.
type appClientFunc func()

func (f appClientFunc) App(context.Context) (*github.Client, error) {
	f()
	return nil, errors.New("no App client in this test")
}

// staticApp hands out one client.
type staticApp struct{ c *github.Client }

func (a staticApp) App(context.Context) (*github.Client, error) { return a.c, nil }

// deliveriesAPI serves GET /app/hook/deliveries in pages of the given
// deliveries, and answers each redelivery with the status its id has in
// answers (202 otherwise), recording the ids asked for.
type deliveriesAPI struct {
	pages   [][]*github.HookDelivery
	answers map[int64]int
	mu      sync.Mutex
	asked   []int64
	listed  int
}

func (d *deliveriesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/app/hook/deliveries":
		page := 0
		if c := r.URL.Query().Get("cursor"); c != "" {
			_, _ = fmt.Sscan(c, &page) // a bad cursor reads as the first page
		}
		d.mu.Lock()
		d.listed++
		d.mu.Unlock()
		if page+1 < len(d.pages) {
			next := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: fmt.Sprintf("cursor=%d&per_page=100", page+1)}
			w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", next.String()))
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(d.pages[page]) // a failed write fails the test's assertions
	case r.Method == http.MethodPost:
		var id int64
		if _, err := fmt.Sscanf(r.URL.Path, "/app/hook/deliveries/%d/attempts", &id); err != nil {
			http.NotFound(w, r)
			return
		}
		d.mu.Lock()
		d.asked = append(d.asked, id)
		code, ok := d.answers[id]
		d.mu.Unlock()
		if !ok {
			code = http.StatusAccepted
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"message":"as scripted"}`)) // a failed write fails the test's assertions
	default:
		http.NotFound(w, r)
	}
}

func delivery(id int64, guid string, status int, at time.Time) *github.HookDelivery {
	return &github.HookDelivery{ID: github.Int64(id), GUID: github.String(guid), Event: github.String("issue_comment"),
		StatusCode: github.Int(status), DeliveredAt: &github.Timestamp{Time: at}}
}

// statusClassifier reads 422 as a refusal and 429 as a rate limit, as the
// engine's classification does.
func statusClassifier(err error, _ time.Time) (time.Duration, bool) {
	var resp *github.ErrorResponse
	if !errors.As(err, &resp) || resp.Response == nil {
		return 0, false
	}
	switch resp.Response.StatusCode {
	case http.StatusUnprocessableEntity:
		return 0, true
	case http.StatusTooManyRequests:
		return time.Minute, false
	}
	return 0, false
}

func sweepFleet(t *testing.T, api *deliveriesAPI, st *fakeStore) *Fleet {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c := github.NewClient(srv.Client())
	base, err := url.Parse(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = base
	return newTestFleet(st, fakeclock.New(start), &bytes.Buffer{}, Options{
		GitHub: staticApp{c}, ClassifyError: statusClassifier, Redelivery: redelivery(time.Hour),
	})
}

// The sweep asks once for each GUID none of whose attempts got a 200–399, for
// its newest attempt, within the window and the cap; a refusal counts
// against the cap, a transient failure does not.
func TestSweepDeliveriesAsksForWhatFailedWithinTheCaps(t *testing.T) {
	h := func(d time.Duration) time.Time { return start.Add(-d * time.Hour) }
	api := &deliveriesAPI{
		pages: [][]*github.HookDelivery{
			{
				delivery(1, "answered", 200, h(1)), delivery(2, "answered", 503, h(2)),
				delivery(3, "lost", 503, h(1)), delivery(4, "lost", 0, h(3)),
				delivery(5, "accepted-late", 0, h(1)),
				// GitHub counts 200–399 as delivered.
				delivery(11, "redirected", 302, h(1)), delivery(12, "last-success", 399, h(1)),
			},
			{
				delivery(6, "capped", 503, h(4)),
				delivery(7, "refused", 503, h(5)),
				delivery(8, "flaky", 503, h(6)),
			},
			{
				delivery(9, "too-old", 503, h(25)),
			},
			{
				delivery(10, "never-listed", 503, h(26)),
			},
		},
		answers: map[int64]int{7: http.StatusUnprocessableEntity, 8: http.StatusBadGateway},
	}
	st := newFakeStore()
	st.known["accepted-late"] = true
	st.asked["capped"] = 2
	f := sweepFleet(t, api, st)
	n, err := f.SweepDeliveries(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("asked for %d (%v), want 1", n, err)
	}
	if want := []int64{3, 7, 8}; !slices.Equal(api.asked, want) {
		t.Errorf("redeliveries asked = %v, want %v (the lost GUID's newest attempt, then the refused and the flaky)", api.asked, want)
	}
	if api.listed != 3 {
		t.Errorf("listed %d pages, want 3 (the listing stops at the window)", api.listed)
	}
	want := map[string]int{"lost": 1, "refused": 1, "capped": 2}
	if len(st.asked) != len(want) {
		t.Errorf("counted %v, want %v", st.asked, want)
	}
	for guid, n := range want {
		if st.asked[guid] != n {
			t.Errorf("counted %v, want %v", st.asked, want)
			break
		}
	}
	if !st.redeliveryPruned.Equal(start.Add(-48 * time.Hour)) {
		t.Errorf("pruned before %v, want two windows ago", st.redeliveryPruned)
	}
}

// A rate limit stops the sweep: the rest wait for the next one, their caps
// untouched.
func TestSweepDeliveriesStopsAtARateLimit(t *testing.T) {
	api := &deliveriesAPI{
		pages:   [][]*github.HookDelivery{{delivery(1, "first", 503, start.Add(-time.Hour)), delivery(2, "second", 503, start.Add(-2*time.Hour))}},
		answers: map[int64]int{1: http.StatusTooManyRequests},
	}
	st := newFakeStore()
	f := sweepFleet(t, api, st)
	n, err := f.SweepDeliveries(context.Background())
	if err == nil || n != 0 {
		t.Fatalf("asked for %d (%v), want 0 and the rate limit", n, err)
	}
	if !slices.Equal(api.asked, []int64{1}) || len(st.asked) != 0 {
		t.Errorf("asked %v, counted %v: want only the first asked, nothing counted", api.asked, st.asked)
	}
}
