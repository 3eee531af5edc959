package fakegithub

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
)

// receiver is a test webhook endpoint: it records what it is sent and
// answers with status.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status int
	hook   func(r *http.Request) // runs before answering, if set
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	rc := &receiver{status: status}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		status, hook := rc.status, rc.hook
		rc.mu.Unlock()
		if hook != nil {
			hook(r)
		}
		w.Header().Set("X-Receiver", "yes")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "answer "+strconv.Itoa(status))
	}))
	t.Cleanup(rc.Close)
	return rc
}

// setHook makes the receiver run f on each request before answering.
func (rc *receiver) setHook(f func(r *http.Request)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.hook = f
}

func (rc *receiver) received() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// jwtClientAt authenticates as the App with a JWT issued at the server
// time at, for tests that move the server's clock away from the real one
// (ghinstallation signs with the real clock).
func jwtClientAt(t *testing.T, s *Server, at time.Time) *github.Client {
	t.Helper()
	jwt := signJWT(t, appKey(t, s), map[string]any{
		"iss": strconv.FormatInt(s.AppID(), 10),
		"iat": at.Add(-30 * time.Second).Unix(),
		"exp": at.Add(5 * time.Minute).Unix(),
	})
	c, err := github.NewClient(nil).WithAuthToken(jwt).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fixedClock(s *Server, at time.Time) { s.SetClock(func() time.Time { return at }) }

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func hmacHex(secret string, body []byte, sha256sum bool) string {
	h := hmac.New(sha1.New, []byte(secret))
	if sha256sum {
		h = hmac.New(sha256.New, []byte(secret))
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

func TestDeliverySignedWithGitHubHeaders(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	rc := newReceiver(t, http.StatusAccepted)
	// The app handling a delivery calls back into GitHub; that would
	// deadlock if the server held its lock during the delivery.
	callback := make(chan error, 1)
	rc.setHook(func(*http.Request) {
		_, _, err := appClient(t, s).Apps.Get(ctx, "")
		callback <- err
	})
	s.SetWebhookTargets("s3cret", rc.URL)

	payload := []byte(`{"action":"opened","installation":{"id":1},"repository":{"id":101},"number":7}`)
	d := s.Deliver(ctx, "pull_request", payload)
	rc.setHook(nil)
	if callbackErr := <-callback; callbackErr != nil {
		t.Fatalf("calling back during the delivery: %v", callbackErr)
	}
	if d.StatusCode != http.StatusAccepted || d.Status != "OK" || d.Redelivery || d.Target != 0 || d.Event != "pull_request" {
		t.Errorf("delivery = %+v", d)
	}
	got := rc.received()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests", len(got))
	}
	h, body := got[0].header, got[0].body
	if string(body) != string(payload) {
		t.Errorf("body = %s", body)
	}
	want := map[string]string{
		"Content-Type":                           "application/json",
		"X-GitHub-Event":                         "pull_request",
		"X-GitHub-Delivery":                      d.GUID,
		"X-GitHub-Hook-ID":                       strconv.FormatInt(webhookID, 10),
		"X-GitHub-Hook-Installation-Target-Type": "integration",
		"X-GitHub-Hook-Installation-Target-ID":   "4242",
		"X-Hub-Signature-256":                    "sha256=" + hmacHex("s3cret", payload, true),
		"X-Hub-Signature":                        "sha1=" + hmacHex("s3cret", payload, false),
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
	if !regexp.MustCompile(`^GitHub-Hookshot/[0-9a-f]+$`).MatchString(h.Get("User-Agent")) {
		t.Errorf("User-Agent = %q", h.Get("User-Agent"))
	}
	if !uuidV4.MatchString(d.GUID) {
		t.Errorf("GUID %q is not a v4 UUID", d.GUID)
	}
	// A wrong secret does not verify: the signature is over this body
	// with this secret.
	if h.Get("X-Hub-Signature-256") == "sha256="+hmacHex("other", payload, true) {
		t.Error("signature does not depend on the secret")
	}

	d2 := s.Deliver(ctx, "pull_request", payload)
	if d2.GUID == d.GUID || d2.ID == d.ID {
		t.Errorf("second delivery reuses GUID or id: %+v, %+v", d, d2)
	}

	// The log, through go-github, as the app would read it.
	app := appClient(t, s)
	full, _, err := app.Apps.GetHookDelivery(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.GetGUID() != d.GUID || full.GetEvent() != "pull_request" || full.GetAction() != "opened" ||
		full.GetInstallationID() != 1 || full.GetRepositoryID() != widgetsID || full.GetStatus() != "OK" ||
		full.GetStatusCode() != http.StatusAccepted || full.GetRedelivery() || full.Duration == nil || *full.Duration <= 0 {
		t.Errorf("delivery = %v", full)
	}
	if full.Request == nil || full.Request.Headers["X-GitHub-Delivery"] != d.GUID || full.Request.Headers["X-Hub-Signature-256"] != want["X-Hub-Signature-256"] {
		t.Errorf("request = %v", full.Request)
	}
	var sent map[string]any
	if full.Request == nil || full.Request.RawPayload == nil || json.Unmarshal(*full.Request.RawPayload, &sent) != nil || sent["number"] != float64(7) {
		t.Errorf("request payload = %v", full.Request)
	}
	var answer string
	if full.Response == nil || full.Response.RawPayload == nil || json.Unmarshal(*full.Response.RawPayload, &answer) != nil || answer != "answer 202" {
		t.Errorf("response payload = %v", full.Response)
	}
	if full.Response == nil || full.Response.Headers["X-Receiver"] != "yes" {
		t.Errorf("response headers = %v", full.Response)
	}

	// A payload without installation or repository has nulls for them.
	d3 := s.Deliver(ctx, "ping", []byte(`{"zen":"Keep it simple."}`))
	ping, _, err := app.Apps.GetHookDelivery(ctx, d3.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ping.InstallationID != nil || ping.RepositoryID != nil || ping.Action != nil {
		t.Errorf("ping = %v", ping)
	}

	_, _, err = app.Apps.GetHookDelivery(ctx, 999999)
	wantStatus(t, err, http.StatusNotFound)

	// No secret, no signatures, as on GitHub.
	s.SetWebhookTargets("", rc.URL)
	s.Deliver(ctx, "ping", []byte(`{}`))
	last := rc.received()[len(rc.received())-1].header
	if last.Get("X-Hub-Signature-256") != "" || last.Get("X-Hub-Signature") != "" {
		t.Errorf("unsigned delivery carries signatures: %v", last)
	}
}

func TestFailedDeliveries(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	down := newReceiver(t, http.StatusServiceUnavailable)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close() // nothing listens there any more: connection refused
	// The stuck receiver answers only once the test is over, long after
	// the sender has given up.
	unstick := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-unstick
	}))
	t.Cleanup(stuck.Close)
	t.Cleanup(func() { close(unstick) }) // cleanups run last first: before stuck.Close
	s.SetWebhookTargets("k", down.URL, goneURL, stuck.URL)
	s.SetDeliveryTimeout(100 * time.Millisecond)

	cases := []struct {
		target int
		status string
		code   int
	}{
		{0, "Invalid HTTP Response: 503", 503},
		{1, "failed to connect", 0},
		{2, "timed out", 0},
	}
	for _, tc := range cases {
		d := s.DeliverTo(ctx, tc.target, "issues", []byte(`{"action":"edited"}`))
		if d.Status != tc.status || d.StatusCode != tc.code || d.Target != tc.target {
			t.Errorf("target %d: delivery = %+v, want status %q code %d", tc.target, d, tc.status, tc.code)
		}
	}

	app := appClient(t, s)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("listed %d deliveries", len(list))
	}
	// Newest first: the timeout, the refusal, the 503.
	for i, tc := range []int{2, 1, 0} {
		if list[i].GetStatus() != cases[tc].status || list[i].GetStatusCode() != cases[tc].code {
			t.Errorf("listed[%d] = %v", i, list[i])
		}
	}
	// No answer: the log has no response headers or body.
	refused, _, err := app.Apps.GetHookDelivery(ctx, list[1].GetID())
	if err != nil {
		t.Fatal(err)
	}
	if refused.Response == nil || refused.Response.Headers != nil || refused.Response.RawPayload != nil {
		t.Errorf("refused delivery's response = %v", refused.Response)
	}
	if got := len(down.received()); got != 1 {
		t.Errorf("the 503 target got %d deliveries", got)
	}
}

func TestDeliveriesRoundRobin(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	a, b := newReceiver(t, 200), newReceiver(t, 200)
	s.SetWebhookTargets("k", a.URL, b.URL)

	var targets []int
	for i := 0; i < 3; i++ {
		targets = append(targets, s.Deliver(ctx, "push", []byte(`{}`)).Target)
	}
	// DeliverTo does not move Deliver's turn.
	s.DeliverTo(ctx, 0, "push", []byte(`{}`))
	targets = append(targets, s.Deliver(ctx, "push", []byte(`{}`)).Target)
	if want := []int{0, 1, 0, 1}; !equalInts(targets, want) {
		t.Errorf("targets = %v, want %v", targets, want)
	}
	if len(a.received()) != 3 || len(b.received()) != 2 {
		t.Errorf("a got %d, b got %d", len(a.received()), len(b.received()))
	}

	// Concurrent deliveries get distinct ids and the log stays in id
	// order.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Deliver(ctx, "push", []byte(`{}`))
		}()
	}
	wg.Wait()
	all := s.Deliveries()
	if len(all) != 13 {
		t.Fatalf("%d deliveries", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID <= all[i-1].ID {
			t.Errorf("log out of order at %d: %d after %d", i, all[i].ID, all[i-1].ID)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var nextLink = regexp.MustCompile(`^<http://127\.0\.0\.1:\d+/api/v3/app/hook/deliveries\?cursor=v1_(\d+)&per_page=3>; rel="next"`)

func TestListDeliveriesCursorPagination(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	rc := newReceiver(t, 200)
	s.SetWebhookTargets("k", rc.URL)
	for i := 0; i < 7; i++ {
		s.Deliver(ctx, "issues", []byte(`{"action":"opened"}`))
	}
	all := s.Deliveries()

	app := appClient(t, s)
	opts := &github.ListCursorOptions{PerPage: 3}
	var ids []int64
	var sizes []int
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		list, resp, err := app.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(list))
		for _, d := range list {
			ids = append(ids, d.GetID())
		}
		if pages == 0 {
			m := nextLink.FindStringSubmatch(resp.Header.Get("Link"))
			if m == nil || m[1] != strconv.FormatInt(all[3].ID, 10) {
				t.Errorf("first page's Link = %q", resp.Header.Get("Link"))
			}
		}
		if resp.Cursor == "" {
			break
		}
		opts.Cursor = resp.Cursor
	}
	if !equalInts(sizes, []int{3, 3, 1}) {
		t.Errorf("page sizes = %v", sizes)
	}
	if len(ids) != len(all) {
		t.Fatalf("paged %d ids, want %d", len(ids), len(all))
	}
	for i, id := range ids {
		if want := all[len(all)-1-i].ID; id != want {
			t.Errorf("ids[%d] = %d, want %d (newest first)", i, id, want)
		}
	}

	// A later page links back to the previous one.
	_, resp, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 3, Cursor: "v1_" + strconv.FormatInt(all[3].ID, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Header.Get("Link"), "cursor=v1_"+strconv.FormatInt(all[6].ID, 10)+"&per_page=3>; rel=\"prev\"") {
		t.Errorf("second page's Link = %q", resp.Header.Get("Link"))
	}

	// per_page is capped at 100, and the default is 30.
	for i := 0; i < 100; i++ {
		s.Deliver(ctx, "issues", []byte(`{}`))
	}
	big, _, err := app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{PerPage: 500})
	if err != nil || len(big) != 100 {
		t.Errorf("per_page=500: %d deliveries, %v", len(big), err)
	}
	def, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(def) != 30 {
		t.Errorf("default page: %d deliveries, %v", len(def), err)
	}

	_, _, err = app.Apps.ListHookDeliveries(ctx, &github.ListCursorOptions{Cursor: "garbage"})
	wantStatus(t, err, http.StatusBadRequest)

	// App endpoints want the JWT: an installation token gets GitHub's 401.
	_, _, err = appInstallClient(t, s, 1).Apps.ListHookDeliveries(ctx, nil)
	if er := wantStatus(t, err, http.StatusUnauthorized); er.Message != "A JSON web token could not be decoded" {
		t.Errorf("message = %q", er.Message)
	}
	// And the routes are recorded like any other.
	rec := s.RequestsMatching("GET", "/app/hook/deliveries")
	if len(rec) == 0 || rec[0].Auth != "jwt" || rec[0].Status != http.StatusOK {
		t.Errorf("recorded %+v", rec)
	}
}

func TestListDeliveriesStatusFilter(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	ok, redirect, bad := newReceiver(t, 200), newReceiver(t, http.StatusFound), newReceiver(t, 500)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	s.SetWebhookTargets("k", ok.URL, redirect.URL, bad.URL, goneURL)
	for target := 0; target < 4; target++ {
		s.DeliverTo(ctx, target, "push", []byte(`{}`))
	}
	app := appClient(t, s)
	list := func(status string) []int {
		t.Helper()
		req, err := app.NewRequest("GET", "app/hook/deliveries?status="+status, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []*github.HookDelivery
		if _, err := app.Do(ctx, req, &out); err != nil {
			t.Fatalf("status=%s: %v", status, err)
		}
		var codes []int
		for _, d := range out {
			codes = append(codes, d.GetStatusCode())
		}
		return codes
	}
	// The docs: success is a status code of 200-399, failure 400-599. A
	// delivery that got no answer (0) is in neither.
	if got := list("success"); !equalInts(got, []int{302, 200}) {
		t.Errorf("success = %v", got)
	}
	if got := list("failure"); !equalInts(got, []int{500}) {
		t.Errorf("failure = %v", got)
	}
	if got := list(""); len(got) != 4 {
		t.Errorf("unfiltered = %v", got)
	}
	if d := s.Deliveries()[1]; d.Status != "Invalid HTTP Response: 302" {
		t.Errorf("a redirect is not followed, nor OK: %+v", d)
	}
	req, _ := app.NewRequest("GET", "app/hook/deliveries?status=pending", nil)
	_, err := app.Do(ctx, req, nil)
	wantStatus(t, err, http.StatusUnprocessableEntity)
}

func TestRedelivery(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	a, b := newReceiver(t, http.StatusServiceUnavailable), newReceiver(t, 200)
	// The replica receiving the redelivery calls back into GitHub, as the
	// app would; the server must not hold its lock meanwhile.
	b.setHook(func(*http.Request) { _ = s.Requests() })
	s.SetWebhookTargets("k", a.URL, b.URL)

	payload := []byte(`{"action":"created","installation":{"id":1}}`)
	first := s.DeliverTo(ctx, 0, "issue_comment", payload)
	if first.StatusCode != 503 {
		t.Fatalf("first attempt = %+v", first)
	}

	app := appClient(t, s)
	_, resp, err := app.Apps.RedeliverHookDelivery(ctx, first.ID)
	var accepted *github.AcceptedError
	if !errors.As(err, &accepted) || resp.StatusCode != http.StatusAccepted || strings.TrimSpace(string(accepted.Raw)) != "{}" {
		t.Fatalf("redeliver: %v, %v", resp, err)
	}
	s.WaitRedeliveries()

	all := s.Deliveries()
	if len(all) != 2 {
		t.Fatalf("%d attempts: %+v", len(all), all)
	}
	re := all[1]
	if !re.Redelivery || re.GUID != first.GUID || re.Event != "issue_comment" || re.Target != 1 || re.StatusCode != 200 || re.ID == first.ID {
		t.Errorf("redelivery = %+v (first %+v)", re, first)
	}
	got := b.received()
	if len(got) != 1 || got[0].header.Get("X-GitHub-Delivery") != first.GUID || string(got[0].body) != string(payload) ||
		got[0].header.Get("X-Hub-Signature-256") != "sha256="+hmacHex("k", payload, true) {
		t.Errorf("replica b got %+v", got)
	}
	logged, _, err := app.Apps.GetHookDelivery(ctx, re.ID)
	if err != nil || !logged.GetRedelivery() || logged.GetGUID() != first.GUID {
		t.Errorf("logged redelivery = %v, %v", logged, err)
	}

	// Redelivering the redelivery goes on to the next replica: back to a.
	_, _, err = app.Apps.RedeliverHookDelivery(ctx, re.ID)
	if !errors.As(err, &accepted) {
		t.Fatal(err)
	}
	s.WaitRedeliveries()
	if all := s.Deliveries(); len(all) != 3 || all[2].Target != 0 || all[2].GUID != first.GUID || len(a.received()) != 2 {
		t.Errorf("second redelivery: %+v", all)
	}

	_, _, err = app.Apps.RedeliverHookDelivery(ctx, 987654)
	wantStatus(t, err, http.StatusNotFound)
	_, _, err = appInstallClient(t, s, 1).Apps.RedeliverHookDelivery(ctx, first.ID)
	wantStatus(t, err, http.StatusUnauthorized)
}

func TestCloseWaitsForRedeliveries(t *testing.T) {
	s := New()
	s.AddInstallation(1, "acme")
	ctx := context.Background()
	arrived, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, 200)
	s.SetWebhookTargets("k", rc.URL)
	first := s.Deliver(ctx, "push", []byte(`{}`))
	rc.setHook(func(*http.Request) {
		close(arrived)
		<-release
	})

	_, _, err := appClient(t, s).Apps.RedeliverHookDelivery(ctx, first.ID)
	var accepted *github.AcceptedError
	if !errors.As(err, &accepted) {
		t.Fatal(err)
	}
	<-arrived // the redelivery is in flight, and will stay so until released
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a redelivery was in flight")
	default:
	}
	close(release)
	<-closed
	if all := s.Deliveries(); len(all) != 2 || !all[1].Redelivery {
		t.Errorf("after Close: %+v", all)
	}
}

func TestDeliveriesOlderThanThreeDays(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	rc := newReceiver(t, 200)
	s.SetWebhookTargets("k", rc.URL)
	now := time.Now().Truncate(time.Second)

	fixedClock(s, now.Add(-deliveryRetention)) // exactly 3 days before now
	old := s.Deliver(ctx, "push", []byte(`{}`))
	fixedClock(s, now.Add(-deliveryRetention+time.Second))
	recent := s.Deliver(ctx, "push", []byte(`{}`))
	fixedClock(s, now)

	app := jwtClientAt(t, s, now)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].GetID() != recent.ID {
		t.Errorf("listed %v, want only %d", list, recent.ID)
	}
	if !list[0].GetDeliveredAt().Time.Equal(now.Add(-deliveryRetention + time.Second)) {
		t.Errorf("delivered_at = %v", list[0].GetDeliveredAt())
	}

	_, _, err = app.Apps.RedeliverHookDelivery(ctx, old.ID)
	er := wantStatus(t, err, http.StatusUnprocessableEntity)
	if er.Message != "Validation Failed" || len(er.Errors) != 1 || !strings.Contains(er.Errors[0].Message, "3 days") {
		t.Errorf("refusal = %+v", er)
	}
	_, _, err = app.Apps.RedeliverHookDelivery(ctx, recent.ID)
	var accepted *github.AcceptedError
	if !errors.As(err, &accepted) {
		t.Fatalf("redelivering a recent delivery: %v", err)
	}
	s.WaitRedeliveries()
	all := s.Deliveries()
	if len(all) != 3 || all[2].GUID != recent.GUID || !all[2].Redelivery || !all[2].DeliveredAt.Equal(now) {
		t.Errorf("deliveries = %+v", all)
	}

	// An old delivery can still be read by id.
	if _, _, err := app.Apps.GetHookDelivery(ctx, old.ID); err != nil {
		t.Errorf("get old delivery: %v", err)
	}
}

func TestRedeliverToAChosenTarget(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	a, b := newReceiver(t, 200), newReceiver(t, 200)
	s.SetWebhookTargets("k", a.URL, b.URL)
	payload := []byte(`{"action":"created"}`)
	first := s.DeliverTo(ctx, 1, "issue_comment", payload)
	again := s.Redeliver(ctx, first.ID, 1)
	if !again.Redelivery || again.GUID != first.GUID || again.Target != 1 || again.StatusCode != 200 || again.ID == first.ID {
		t.Errorf("redelivery = %+v (first %+v)", again, first)
	}
	if got := b.received(); len(got) != 2 || got[1].header.Get("X-GitHub-Delivery") != first.GUID || string(got[1].body) != string(payload) {
		t.Errorf("target 1 got %+v", got)
	}
	if len(a.received()) != 0 {
		t.Error("target 0 got a delivery it was not sent")
	}
}

func TestHoldNextWithLooksAtTheBody(t *testing.T) {
	s := newServer(t)
	s.AddInstallation(1, "octo")
	s.AddRepo(Repo{ID: 77, Owner: "octo", Name: "r", InstallationID: 1})
	arrived, release := s.HoldNextWith("POST", "/app/installations/*/access_tokens", func(body []byte) bool {
		return strings.Contains(string(body), "repository_ids")
	})
	defer release()
	app := appClient(t, s)
	ctx := context.Background()
	// Not held: its body has no repository_ids.
	if _, _, err := app.Apps.CreateInstallationToken(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived:
		t.Fatal("held a request whose body does not match")
	default:
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := app.Apps.CreateInstallationToken(ctx, 1, &github.InstallationTokenOptions{RepositoryIDs: []int64{77}})
		done <- err
	}()
	<-arrived
	select {
	case err := <-done:
		t.Fatalf("the held request was answered before its release: %v", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Errorf("after the release: %v", err)
	}
}
