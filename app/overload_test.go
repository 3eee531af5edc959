package app_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app"
	"github.com/inspecthq/inspect/config"
)

// Past http.max_inflight_webhooks the webhook answers 503 with a
// Retry-After at once (GitHub records the failure and the sweep asks for
// the delivery again) instead of queueing without bound.
func TestWebhooksAreShedWith503UnderOverload(t *testing.T) {
	h := newHarness(t, func(c *config.Server) { c.HTTP.MaxInflightWebhooks = 1 })
	url := h.srv.URL + app.WebhookPath
	// One delivery holds the only slot: its body never ends until we say.
	body, hold := io.Pipe()
	slow, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	slow.Header.Set("X-GitHub-Event", "ping")
	slowDone := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(slow)
		if err != nil {
			slowDone <- 0
			return
		}
		resp.Body.Close()
		slowDone <- resp.StatusCode
	}()
	if _, err := hold.Write([]byte(`{"zen":`)); err != nil {
		t.Fatal(err)
	}
	// The next one is shed as soon as the slow one holds the slot. (Polled:
	// nothing tells the test when the server has started reading.)
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, retryAfter := post(t, url)
		if code == http.StatusServiceUnavailable {
			if retryAfter == "" {
				t.Error("a shed delivery has no Retry-After")
			}
			break
		}
		if code != http.StatusUnauthorized || time.Now().After(deadline) {
			t.Fatalf("second delivery: %d, want 401 (unsigned) until the slot is taken, then 503", code)
		}
	}
	hold.Close()
	if code := <-slowDone; code != http.StatusUnauthorized {
		t.Errorf("the slow delivery: %d, want 401 (it is unsigned)", code)
	}
	// The slot is free again.
	if code, _ := post(t, url); code != http.StatusUnauthorized {
		t.Errorf("after the slow one: %d, want 401 (not shed)", code)
	}
}

func post(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}
