package app_test

import (
	"context"
	"testing"

	"github.com/inspecthq/inspect/config"
)

// Deliveries GitHub could not hand over are asked for again, once per
// sweep and at most github.redelivery.max_per_guid times; a GUID that got
// a 2xx never is, and Accept's deduplication keeps the effects single.
func TestSweepRedeliversWhatFailedAndNothingElse(t *testing.T) {
	h := newHarness(t, func(c *config.Server) { c.GitHub.Redelivery.MaxPerGUID = 2 })
	ctx := context.Background()
	up := h.srv.URL + "/api/github/hook"
	h.gh.SetWebhookTargets(secret, up)
	if d := h.gh.Deliver(ctx, "issue_comment", h.event(commentOpts{body: "/inspect fix the typo"})); d.StatusCode != 200 {
		t.Fatalf("first delivery: %d %s", d.StatusCode, d.Status)
	}
	// Two deliveries that never reach us (nothing listens there).
	h.gh.SetWebhookTargets(secret, "http://127.0.0.1:1/api/github/hook")
	lost := map[string]bool{}
	for _, body := range []string{"/inspect status", "/inspect help"} {
		d := h.gh.Deliver(ctx, "issue_comment", h.event(commentOpts{body: body}))
		if d.StatusCode != 0 {
			t.Fatalf("delivery to nowhere: %d %s", d.StatusCode, d.Status)
		}
		lost[d.GUID] = true
	}
	h.gh.SetWebhookTargets(secret, up)
	n, err := h.svc.SweepDeliveries(ctx)
	if err != nil || n != 2 {
		t.Fatalf("sweep asked for %d redeliveries (%v), want 2", n, err)
	}
	h.gh.WaitRedeliveries()
	for _, d := range h.gh.Deliveries() {
		if d.Redelivery && (!lost[d.GUID] || d.StatusCode != 200) {
			t.Errorf("redelivery %+v: want only the lost GUIDs, answered 200", d)
		}
	}
	// They succeeded: nothing more to ask for.
	if n, err := h.svc.SweepDeliveries(ctx); err != nil || n != 0 {
		t.Errorf("second sweep asked for %d (%v), want 0", n, err)
	}
	h.runWorkers()
	if got := len(h.sessions()); got != 1 {
		t.Errorf("sessions = %d, want 1 (the other commands are replies)", got)
	}

	// A GUID that keeps failing is asked for max_per_guid times, then left.
	h.gh.SetWebhookTargets(secret, "http://127.0.0.1:1/api/github/hook")
	stuck := h.gh.Deliver(ctx, "issue_comment", h.event(commentOpts{body: "/inspect status"}))
	asked := 0
	for range 4 {
		n, err := h.svc.SweepDeliveries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		asked += n
		h.gh.WaitRedeliveries()
	}
	if asked != 2 {
		t.Errorf("a GUID that keeps failing was asked for %d times, want 2 (the cap)", asked)
	}
	attempts := 0
	for _, d := range h.gh.Deliveries() {
		if d.GUID == stuck.GUID {
			attempts++
		}
	}
	if attempts != 3 {
		t.Errorf("stuck GUID has %d attempts, want 3 (the first and two redeliveries)", attempts)
	}
}
