package fakegithub

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/internal/standin"
)

// The webhook sender. GitHub POSTs each event to the App's webhook URL,
// signed with the App's webhook secret, and keeps a log of the attempts
// that the App can read and act on (redeliver) through /app/hook/deliveries
// with its JWT. Tests play GitHub's side with Deliver and DeliverTo; the
// app under test may use the REST routes as it would on GitHub.

const (
	// defaultDeliveryTimeout is how long GitHub waits for a receiver to
	// answer before recording the delivery as failed.
	defaultDeliveryTimeout = 10 * time.Second

	// deliveryRetention is how far back GitHub.com lists deliveries and
	// lets them be redelivered ("Redelivering webhooks": the past 3 days).
	deliveryRetention = 72 * time.Hour

	// webhookID is the App's webhook, as X-GitHub-Hook-ID names it. An App
	// has exactly one.
	webhookID int64 = 424200

	// hookshotUA is GitHub's sender: "GitHub-Hookshot/" and a short hex
	// build id.
	hookshotUA = "GitHub-Hookshot/5f3c2a1"

	// maxLoggedResponse bounds the receiver's answer kept for the log.
	maxLoggedResponse = 1 << 20

	docsListDeliveries = "https://docs.github.com/rest/apps/webhooks#list-deliveries-for-an-app-webhook"
	docsGetDelivery    = "https://docs.github.com/rest/apps/webhooks#get-a-delivery-for-an-app-webhook"
	docsRedeliver      = "https://docs.github.com/rest/apps/webhooks#redeliver-a-delivery-for-an-app-webhook"

	deliveryCursorPrefix = "v1_" // GitHub's delivery cursors look like "v1_<id>"
)

// Delivery is one delivery attempt, as Deliver, DeliverTo and Deliveries
// report it.
type Delivery struct {
	ID          int64  // unique per attempt; what /app/hook/deliveries/{id} takes
	GUID        string // X-GitHub-Delivery, shared by an event's redeliveries
	Event       string // X-GitHub-Event
	Status      string // GitHub's wording: "OK", "Invalid HTTP Response: 503", "timed out", "failed to connect"
	StatusCode  int    // the receiver's status; 0 when it did not answer
	Redelivery  bool
	Target      int       // index of the URL among SetWebhookTargets's
	DeliveredAt time.Time // server clock when the attempt was made
}

// webhookSender is the webhook's settings, its delivery log and the
// redeliveries in flight. The Server's mu guards it.
type webhookSender struct {
	secret   string
	urls     []string
	next     int           // round-robin position for Deliver
	timeout  time.Duration // 0 is GitHub's 10 s
	attempts []*attempt    // by ID, oldest first

	// Redeliveries run in goroutines. inflight counts them and idle is
	// closed when the count drops to zero; closing stops new ones once
	// Close has begun. (A sync.WaitGroup would not do: WaitRedeliveries
	// may be waiting while the app asks for another redelivery, and a
	// WaitGroup forbids an Add from zero concurrent with a Wait.)
	inflight int
	idle     chan struct{}
	closing  bool
}

// attempt is one delivery attempt with everything the log shows of it.
type attempt struct {
	Delivery
	url            string
	duration       float64 // seconds
	action         *string
	installationID *int64
	repositoryID   *int64
	reqHeaders     map[string]string
	payload        []byte
	// The receiver's answer; answered is false when there was none
	// (timeout, connection failure).
	answered    bool
	respHeaders map[string]string
	respBody    []byte
}

// hookClient sends deliveries. It does not follow redirects (GitHub
// records a redirect as the receiver's answer), goes straight to the
// target whatever the proxy environment says, and opens a connection per
// delivery, so that nothing lingers between tests.
var hookClient = &http.Client{
	Transport: &http.Transport{
		Proxy:              nil,
		DisableKeepAlives:  true,
		DisableCompression: true,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// SetWebhookTargets sets where deliveries go and the webhook secret that
// signs them ("" for none: GitHub then sends no signature headers).
// Several URLs stand for replicas of the app behind a load balancer:
// Deliver takes them in turn, starting over with the first, and DeliverTo
// picks one. It panics without a URL.
func (s *Server) SetWebhookTargets(secret string, urls ...string) {
	if len(urls) == 0 {
		panic("fakegithub: SetWebhookTargets needs at least one URL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook.secret = secret
	s.hook.urls = slices.Clone(urls)
	s.hook.next = 0
}

// SetDeliveryTimeout sets how long a delivery waits for the receiver's
// answer before it is recorded as "timed out" (GitHub's 10 s by default).
// It panics unless d is positive.
func (s *Server) SetDeliveryTimeout(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("fakegithub: SetDeliveryTimeout needs a positive timeout, not %v", d))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook.timeout = d
}

// Deliver sends an event to the next target in turn, as GitHub does: a
// POST of payload with GitHub's headers and signatures and a new GUID. It
// returns once the target has answered, failed or timed out, and the
// attempt is in the log. The server's lock is not held meanwhile, so the
// target may call back into the server. It panics if no target was set.
func (s *Server) Deliver(ctx context.Context, event string, payload []byte) Delivery {
	return s.attempt(ctx, func(h *webhookSender) int {
		t := h.next % len(h.urls)
		h.next++
		return t
	}, event, standin.UUID(), payload, false)
}

// DeliverTo is Deliver to the target of that index, leaving the turn of
// Deliver where it was. It panics if there is no such target.
func (s *Server) DeliverTo(ctx context.Context, target int, event string, payload []byte) Delivery {
	return s.attempt(ctx, chosenTarget("DeliverTo", target), event, standin.UUID(), payload, false)
}

// chosenTarget picks the target of that index, panicking (in the caller's
// name) when there is none.
func chosenTarget(caller string, target int) func(*webhookSender) int {
	return func(h *webhookSender) int {
		if target < 0 || target >= len(h.urls) {
			panic(fmt.Sprintf("fakegithub: %s: no target %d among %d", caller, target, len(h.urls)))
		}
		return target
	}
}

// Redeliver delivers the attempt id's payload again, with its GUID and
// event, as a redelivery, to the target of that index, and returns once it
// is answered: GitHub redelivering at someone's request, with the test
// choosing which replica behind the load balancer gets it. It panics if
// there is no such attempt or target.
func (s *Server) Redeliver(ctx context.Context, id int64, target int) Delivery {
	s.mu.Lock()
	orig := s.attemptByID(id)
	s.mu.Unlock()
	if orig == nil {
		panic(fmt.Sprintf("fakegithub: Redeliver: no delivery attempt %d", id))
	}
	return s.attempt(ctx, chosenTarget("Redeliver", target), orig.Event, orig.GUID, orig.payload, true)
}

// Deliveries returns every delivery attempt, redeliveries included, oldest
// first, whatever their age.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, 0, len(s.hook.attempts))
	for _, a := range s.hook.attempts {
		out = append(out, a.Delivery)
	}
	return out
}

// WaitRedeliveries waits until no redelivery asked for through POST
// /app/hook/deliveries/{id}/attempts is in flight, including any asked for
// while waiting. The app must not call it from a handler of a delivery.
func (s *Server) WaitRedeliveries() {
	s.mu.Lock()
	for s.hook.inflight > 0 {
		idle := s.hook.idle
		s.mu.Unlock()
		<-idle
		s.mu.Lock()
	}
	s.mu.Unlock()
}

// stopRedeliveries refuses new redeliveries and waits for those in
// flight. Close calls it.
func (s *Server) stopRedeliveries() {
	s.mu.Lock()
	s.hook.closing = true
	s.mu.Unlock()
	s.WaitRedeliveries()
}

// attempt makes one delivery attempt to the target pick chooses (under
// s.mu, from the current targets) and logs it.
func (s *Server) attempt(ctx context.Context, pick func(*webhookSender) int, event, guid string, payload []byte, redelivery bool) Delivery {
	a := &attempt{payload: bytes.Clone(payload)}
	a.GUID, a.Event, a.Redelivery = guid, event, redelivery
	secret, timeout := func() (string, time.Duration) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.hook.urls) == 0 {
			panic("fakegithub: no webhook target; call SetWebhookTargets first")
		}
		a.Target = pick(&s.hook)
		a.url = s.hook.urls[a.Target]
		// The id and time are taken when the attempt starts, so the log
		// is in the order attempts were made even when they overlap.
		a.ID = s.nextID()
		a.DeliveredAt = s.now()
		timeout := s.hook.timeout
		if timeout == 0 {
			timeout = defaultDeliveryTimeout
		}
		return s.hook.secret, timeout
	}()

	var meta struct {
		Action       *string `json:"action"`
		Installation *struct {
			ID *int64 `json:"id"`
		} `json:"installation"`
		Repository *struct {
			ID *int64 `json:"id"`
		} `json:"repository"`
	}
	if json.Unmarshal(payload, &meta) == nil {
		a.action = meta.Action
		if meta.Installation != nil {
			a.installationID = meta.Installation.ID
		}
		if meta.Repository != nil {
			a.repositoryID = meta.Repository.ID
		}
	}

	// GitHub's delivery headers, spelt as GitHub spells them; the log
	// shows them so.
	a.reqHeaders = map[string]string{
		"Accept":                                 "*/*",
		"Content-Type":                           "application/json",
		"User-Agent":                             hookshotUA,
		"X-GitHub-Delivery":                      guid,
		"X-GitHub-Event":                         event,
		"X-GitHub-Hook-ID":                       strconv.FormatInt(webhookID, 10),
		"X-GitHub-Hook-Installation-Target-ID":   strconv.FormatInt(s.appID, 10),
		"X-GitHub-Hook-Installation-Target-Type": "integration",
	}
	if secret != "" {
		a.reqHeaders["X-Hub-Signature"] = "sha1=" + hexHMAC(sha1.New, secret, payload)
		a.reqHeaders["X-Hub-Signature-256"] = "sha256=" + hexHMAC(sha256.New, secret, payload)
	}

	start := time.Now() // the real clock: the server's may stand still
	s.post(ctx, a, timeout)
	a.duration = time.Since(start).Seconds()

	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.hook.attempts, a.ID, func(x *attempt, id int64) int { return cmp.Compare(x.ID, id) })
	s.hook.attempts = slices.Insert(s.hook.attempts, i, a)
	return a.Delivery
}

// post sends the attempt and fills in the receiver's answer and GitHub's
// status for it.
func (s *Server) post(ctx context.Context, a *attempt, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(a.payload))
	if err != nil {
		a.Status = "failed to connect"
		return
	}
	for k, v := range a.reqHeaders {
		req.Header[k] = []string{v} // as spelt, not canonicalised
	}
	resp, err := hookClient.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxLoggedResponse))
		resp.Body.Close()
	}
	if err != nil {
		// No answer, or only part of one: GitHub records no status code.
		a.Status = "failed to connect"
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			a.Status = "timed out"
		}
		return
	}
	a.answered = true
	a.StatusCode = resp.StatusCode
	a.respBody = body
	a.respHeaders = map[string]string{}
	for k, v := range resp.Header {
		a.respHeaders[k] = strings.Join(v, ", ")
	}
	a.Status = "OK"
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Status = fmt.Sprintf("Invalid HTTP Response: %d", resp.StatusCode)
	}
}

func hexHMAC(h func() hash.Hash, secret string, body []byte) string {
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) deliveryRoutes() {
	s.handle("GET /app/hook/deliveries", docsListDeliveries, appOnly, s.listDeliveries)
	s.handle("GET /app/hook/deliveries/{delivery_id}", docsGetDelivery, appOnly, s.getDelivery)
	s.handle("POST /app/hook/deliveries/{delivery_id}/attempts", docsRedeliver, appOnly, s.redeliverDelivery)
}

// retained tells whether GitHub still lists the attempt and lets it be
// redelivered. Callers hold s.mu.
func (s *Server) retained(a *attempt) bool {
	return s.now().Sub(a.DeliveredAt) < deliveryRetention
}

func (a *attempt) json() map[string]any {
	return map[string]any{
		"id":              a.ID,
		"guid":            a.GUID,
		"delivered_at":    timestamp(a.DeliveredAt),
		"redelivery":      a.Redelivery,
		"duration":        a.duration,
		"status":          a.Status,
		"status_code":     a.StatusCode,
		"event":           a.Event,
		"action":          a.action,
		"installation_id": a.installationID,
		"repository_id":   a.repositoryID,
		"throttled_at":    nil,
	}
}

// listDeliveries answers the log newest first, from the last 3 days,
// optionally filtered by outcome. Pagination is by cursor, as GitHub's
// is: a page starts at the delivery the cursor names (or the newest one
// older than it, should that one have aged out or been filtered away), and
// the Link header carries the cursors of the next and previous pages.
func (s *Server) listDeliveries(c *call) response {
	q := c.r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)

	// The docs classify by status code: success is 200-399, failure
	// 400-599. An attempt that got no answer (status code 0) is in
	// neither.
	var keep func(*attempt) bool
	switch status := q.Get("status"); status {
	case "":
		keep = func(*attempt) bool { return true }
	case "success":
		keep = func(a *attempt) bool { return a.StatusCode >= 200 && a.StatusCode <= 399 }
	case "failure":
		keep = func(a *attempt) bool { return a.StatusCode >= 400 && a.StatusCode <= 599 }
	default:
		return validationFailed(c.doc, fieldError{Resource: "HookDelivery", Field: "status", Code: "invalid"})
	}

	var list []*attempt
	for i := len(s.hook.attempts) - 1; i >= 0; i-- {
		if a := s.hook.attempts[i]; s.retained(a) && keep(a) {
			list = append(list, a)
		}
	}

	start := 0
	if cur := q.Get("cursor"); cur != "" {
		n, ok := strings.CutPrefix(cur, deliveryCursorPrefix)
		id, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return errResp(http.StatusBadRequest, "Bad Request", c.doc)
		}
		start = len(list)
		for i, a := range list {
			if a.ID <= id {
				start = i
				break
			}
		}
	}
	end := min(start+per, len(list))

	link := func(a *attempt, rel string) string {
		q.Set("cursor", deliveryCursorPrefix+strconv.FormatInt(a.ID, 10))
		q.Set("per_page", strconv.Itoa(per))
		return standin.Link(c.r, c.origPath, q, rel)
	}
	var links []string
	if end < len(list) {
		links = append(links, link(list[end], "next"))
	}
	if start > 0 && start <= len(list) {
		links = append(links, link(list[max(0, start-per)], "prev"))
	}
	h := http.Header{}
	if len(links) > 0 {
		h.Set("Link", strings.Join(links, ", "))
	}

	out := make([]map[string]any, 0, end-start)
	for _, a := range list[start:end] {
		out = append(out, a.json())
	}
	return response{status: http.StatusOK, body: out, header: h}
}

// findAttempt looks an attempt up by id. Callers hold s.mu.
func (s *Server) findAttempt(c *call) *attempt {
	id, ok := c.intPath("delivery_id")
	if !ok {
		return nil
	}
	return s.attemptByID(id)
}

// attemptByID finds an attempt (they are kept in id order). Callers hold
// s.mu.
func (s *Server) attemptByID(id int64) *attempt {
	i, found := slices.BinarySearchFunc(s.hook.attempts, id, func(x *attempt, id int64) int { return cmp.Compare(x.ID, id) })
	if !found {
		return nil
	}
	return s.hook.attempts[i]
}

// getDelivery answers one attempt in full: what was sent and what came
// back. An attempt past the 3 days is still answered; it is only no
// longer listed or redeliverable.
func (s *Server) getDelivery(c *call) response {
	a := s.findAttempt(c)
	if a == nil {
		return notFound(c.doc)
	}
	body := a.json()
	body["url"] = a.url
	var payload any
	if json.Valid(a.payload) {
		payload = json.RawMessage(a.payload)
	}
	body["request"] = map[string]any{"headers": a.reqHeaders, "payload": payload}
	// The receiver's body is a string in GitHub's log; both are null when
	// it did not answer.
	resp := map[string]any{"headers": nil, "payload": nil}
	if a.answered {
		resp["headers"] = a.respHeaders
		resp["payload"] = string(a.respBody)
	}
	body["response"] = resp
	return jsonResp(http.StatusOK, body)
}

// redeliverDelivery accepts a redelivery and makes it once the call is
// answered: the same event, GUID and payload, marked as a redelivery, to
// the target after the one the attempt went to, as a load balancer in
// front of replicas would move on to another.
func (s *Server) redeliverDelivery(c *call) response {
	a := s.findAttempt(c)
	if a == nil {
		return notFound(c.doc)
	}
	if !s.retained(a) {
		// GitHub documents the 3 days, not the refusal's wording.
		return validationFailed(c.doc, fieldError{
			Resource: "HookDelivery", Field: "delivered_at", Code: "custom",
			Message: "Deliveries older than 3 days cannot be redelivered",
		})
	}
	if s.hook.closing {
		// The server is shutting down and would not wait for it.
		return errResp(http.StatusServiceUnavailable, "Service Unavailable", c.doc)
	}
	if s.hook.inflight == 0 {
		s.hook.idle = make(chan struct{})
	}
	s.hook.inflight++
	orig := a.Delivery
	payload := a.payload
	c.after = append(c.after, func() {
		go func() {
			defer s.redeliveryDone()
			s.attempt(context.Background(), func(h *webhookSender) int {
				return (orig.Target + 1) % len(h.urls)
			}, orig.Event, orig.GUID, payload, true)
		}()
	})
	return jsonResp(http.StatusAccepted, map[string]any{})
}

func (s *Server) redeliveryDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook.inflight--
	if s.hook.inflight == 0 {
		close(s.hook.idle)
	}
}
