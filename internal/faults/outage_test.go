package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/inspecthq/inspect/internal/pgtemp"
	"github.com/inspecthq/inspect/internal/servetest"
)

// While the database is down, deliveries are answered 503 (nothing is
// acknowledged that is not on disk). GitHub does not retry them; once the
// database is back, the redelivery sweep asks for each failed GUID again,
// and every command becomes its session. GUIDs answered 2xx are never
// asked for.
func TestDatabaseOutageDeliveriesAreRecoveredByTheSweep(t *testing.T) {
	pg := pgtemp.Start(t) // private: this test stops it
	f := newFleet(t, fleetOptions{dsn: servetest.NewDatabaseAt(t, pg.DSN()), set: map[string]any{
		"github.redelivery.interval":     "1s",
		"github.redelivery.max_per_guid": 3,
	}})
	f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const before, during = 3, 5
	// deliver sends a command on each issue of [from, to] and expects
	// status for each; it returns their GUIDs.
	deliver := func(from, to, status int) map[string]bool {
		guids := map[string]bool{}
		for n := from; n <= to; n++ {
			f.issue(n)
			d := f.gh.Deliver(ctx, "issue_comment", f.comment(n, "/inspect have a look"))
			if d.StatusCode != status {
				t.Fatalf("delivery %d: %d %s, want %d", n, d.StatusCode, d.Status, status)
			}
			guids[d.GUID] = true
		}
		return guids
	}
	okGUIDs := deliver(1, before, 200)
	pg.Stop()
	failed := deliver(before+1, before+during, 503)
	pg.StartAgain()

	all := f.waitDone(before+during, 2*time.Minute)
	if len(all) != before+during {
		t.Errorf("sessions = %d, want %d", len(all), before+during)
	}
	perIssue := map[int]int{}
	for _, s := range all {
		perIssue[s.Number]++
	}
	for n := 1; n <= before+during; n++ {
		if perIssue[n] != 1 {
			t.Errorf("issue #%d has %d sessions, want 1", n, perIssue[n])
		}
	}
	f.gh.WaitRedeliveries()
	recovered := map[string]bool{}
	for _, d := range f.gh.Deliveries() {
		if !d.Redelivery {
			continue
		}
		if okGUIDs[d.GUID] {
			t.Errorf("GUID %s was answered 200 and still redelivered", d.GUID)
		}
		if d.StatusCode == 200 {
			recovered[d.GUID] = true
		}
	}
	for guid := range failed {
		if !recovered[guid] {
			t.Errorf("GUID %s failed during the outage and was not recovered", guid)
		}
	}
	t.Logf("recovered %d of %d deliveries answered 503 during the outage", len(recovered), len(failed))
	if len(f.gh.RequestsMatching("GET", "/app/hook/deliveries")) == 0 {
		t.Error("the sweep never listed the deliveries")
	}
}
