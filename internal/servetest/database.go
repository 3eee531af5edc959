package servetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, to create databases

	"github.com/inspecthq/inspect/internal/storetest"
)

// NewDatabase creates an empty database on the shared PostgreSQL server
// (storetest.PostgresDSN: INSPECT_TEST_POSTGRES_DSN, default the local test
// server), drops it at the test's cleanup, and returns its DSN. Every
// replica of a test is given the same DSN. It is a database, not a schema
// as storetest makes, so that replicas see exactly what production sees.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return NewDatabaseAt(t, storetest.PostgresDSN())
}

// NewDatabaseAt is NewDatabase on the server at base (a postgres:// URL
// whose user may create databases), e.g. a pgtemp instance's DSN.
func NewDatabaseAt(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("servetest: database URL %q: %v", base, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
	name := "servetest_" + hex.EncodeToString(b[:])
	if err := adminExec(base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("servetest: PostgreSQL at %s is required (start it with .ci/ensure-postgres): %v", base, err)
	}
	t.Cleanup(func() {
		// FORCE ends the connections of replicas that were killed and
		// whose sessions the server has not noticed closing yet.
		if err := adminExec(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("servetest: dropping database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func adminExec(dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}
