package pgtemp_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/inspecthq/inspect/internal/pgtemp"
)

func TestStopAndStartAgainKeepsData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg := pgtemp.Start(t)
	if pg.Port() == 5432 {
		t.Fatalf("the private instance took the shared server's port")
	}

	db, err := sql.Open("pgx", pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the outage')"); err != nil {
		t.Fatal(err)
	}

	pg.Stop()
	if pg.Running() {
		t.Error("Running after Stop")
	}
	pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
	err = db.PingContext(pingCtx)
	pingCancel()
	if err == nil {
		t.Fatal("the database answered while stopped")
	}
	pg.Stop() // stopping a stopped instance does nothing

	port := pg.Port()
	pg.StartAgain()
	if pg.Port() != port {
		t.Errorf("port %d after StartAgain, was %d", pg.Port(), port)
	}
	// The pool's dead connections are discarded; database/sql retries
	// on a fresh one.
	var v string
	if err := db.QueryRowContext(ctx, "SELECT v FROM kept").Scan(&v); err != nil {
		t.Fatalf("after StartAgain: %v", err)
	}
	if v != "before the outage" {
		t.Errorf("kept = %q", v)
	}
}

// Two instances in one test do not collide (ports, directories).
func TestTwoInstances(t *testing.T) {
	a, b := pgtemp.Start(t), pgtemp.Start(t)
	if a.Port() == b.Port() {
		t.Fatalf("both on port %d", a.Port())
	}
	for _, in := range []*pgtemp.Instance{a, b} {
		db, err := sql.Open("pgx", in.DSN())
		if err != nil {
			t.Fatal(err)
		}
		err = db.Ping()
		db.Close()
		if err != nil {
			t.Errorf("port %d: %v", in.Port(), err)
		}
	}
}
