package fakebuildkite

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

type hookConfig struct {
	url, token string
	signed     bool
}

// SetWebhook sets where webhooks go. With signed false each carries the
// token in X-Buildkite-Token; with signed true it carries
// X-Buildkite-Signature: timestamp=<unix>,signature=<hex HMAC-SHA256 of
// "<timestamp>.<body>" keyed by token>. An empty url stops webhooks.
func (s *Server) SetWebhook(url, token string, signed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = hookConfig{url: url, token: token, signed: signed}
}

// DropWebhooks drops the next n webhooks instead of sending them (they are
// still listed by Deliveries, with Dropped set).
func (s *Server) DropWebhooks(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropHooks += n
}

// Delivery is one webhook the server sent, or dropped.
type Delivery struct {
	Event   string
	Body    []byte
	Header  http.Header // nil when dropped
	Status  int         // the receiver's answer; 0 when dropped or unreachable
	Err     string      // a transport error
	Dropped bool
}

// Deliveries returns the webhooks sent or dropped so far, in order. Wait
// first to include those still queued.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

type delivery struct {
	event string
	body  []byte
	hook  hookConfig
}

var sender = map[string]string{"id": "0188a4ed-0000-4000-8000-0000000000ff", "name": "Inspect Webhook"}

// enqueue queues a webhook for b (and j, for job events). Payloads are
// built now, so they show the state of this moment. Callers hold s.mu.
func (s *Server) enqueue(event string, b *build, j *job) {
	if s.hook.url == "" || b.lost {
		return
	}
	payload := map[string]any{"event": event, "build": s.buildJSON(b, false), "sender": sender}
	if p := s.pipelines[key(b.org, b.slug)]; p != nil {
		payload["pipeline"] = s.pipelineJSON(p)
	}
	if j != nil {
		payload["job"] = s.jobJSON(b, j)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	if s.dropHooks > 0 {
		s.dropHooks--
		s.deliveries = append(s.deliveries, Delivery{Event: event, Body: body, Dropped: true})
		return
	}
	s.outbox = append(s.outbox, &delivery{event: event, body: body, hook: s.hook})
	s.addBusy()
	select {
	case s.outboxWake <- struct{}{}:
	default:
	}
}

// deliverLoop sends queued webhooks one at a time, in order.
func (s *Server) deliverLoop() {
	defer s.wg.Done()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		s.mu.Lock()
		if len(s.outbox) == 0 {
			s.mu.Unlock()
			select {
			case <-s.outboxWake:
				continue
			case <-s.stop:
				return
			}
		}
		d := s.outbox[0]
		s.outbox = s.outbox[1:]
		now := s.now()
		s.mu.Unlock()

		rec := s.send(client, d, now)

		s.mu.Lock()
		s.deliveries = append(s.deliveries, rec)
		s.doneBusy()
		s.mu.Unlock()
	}
}

func (s *Server) send(client *http.Client, d *delivery, now time.Time) Delivery {
	rec := Delivery{Event: d.event, Body: d.body}
	req, err := http.NewRequest(http.MethodPost, d.hook.url, bytes.NewReader(d.body))
	if err != nil {
		rec.Err = err.Error()
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Buildkite-Request")
	req.Header.Set("X-Buildkite-Event", d.event)
	req.Header.Set("X-Buildkite-Request", standin.UUID())
	if d.hook.signed {
		req.Header.Set("X-Buildkite-Signature", Sign(d.hook.token, now, d.body))
	} else {
		req.Header.Set("X-Buildkite-Token", d.hook.token)
	}
	rec.Header = req.Header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		rec.Err = err.Error()
		return rec
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	rec.Status = resp.StatusCode
	return rec
}

// Sign returns the X-Buildkite-Signature value for body sent at t:
// "timestamp=<unix>,signature=<hex HMAC-SHA256 of "<unix>.<body>">". Tests
// use it to forge or age webhooks.
func Sign(token string, t time.Time, body []byte) string {
	stamp := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(stamp + "."))
	mac.Write(body)
	return "timestamp=" + stamp + ",signature=" + hex.EncodeToString(mac.Sum(nil))
}
