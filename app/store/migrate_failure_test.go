package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/internal/storetest"
)

// A migration that fails changes nothing: its transaction rolls back, its
// version stays unrecorded, and Open names it; once the cause is gone the
// next start applies it whole. docs/deploy.md ("Upgrades") tells operators
// so. Version 15 adds two columns to attempts; the test takes the version
// off the record and drops the first column only, so that running it again
// adds the first column and then fails on the second, which is still there.
func TestAFailedMigrationChangesNothingAndTheNextStartAppliesIt(t *testing.T) {
	for _, driver := range storetest.Drivers {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			dsn := storetest.DSN(t, driver)
			s, err := store.Open(ctx, driver, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db := rawDB(t, driver, dsn)
			mustExec(t, db, `DELETE FROM schema_migrations WHERE version = 15`)
			mustExec(t, db, `ALTER TABLE attempts DROP COLUMN cache_read_tokens`)

			if s, err := store.Open(ctx, driver, dsn); err == nil {
				_ = s.Close() // the test has failed already; closing is tidiness
				t.Fatal("Open succeeded over a migration that cannot apply")
			} else if !strings.Contains(err.Error(), "migration 15:") {
				t.Errorf("Open's error does not name the migration: %v", err)
			}
			if hasColumn(t, db, "cache_read_tokens") {
				t.Error("the failed migration's first step stayed applied")
			}
			if recorded(t, db, 15) {
				t.Error("the failed migration was recorded")
			}

			// The cause removed, the next start applies it whole.
			mustExec(t, db, `ALTER TABLE attempts DROP COLUMN cache_write_tokens`)
			s, err = store.Open(ctx, driver, dsn)
			if err != nil {
				t.Fatalf("Open after the cause was removed: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if !hasColumn(t, db, "cache_read_tokens") || !hasColumn(t, db, "cache_write_tokens") || !recorded(t, db, 15) {
				t.Error("the migration was not applied whole on the next start")
			}
		})
	}
}

func rawDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	name := "pgx"
	if driver == "sqlite" {
		name = "sqlite"
	}
	db, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // a close error after the test says nothing about it
	return db
}

func mustExec(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// hasColumn reports whether attempts has the column, by selecting it.
func hasColumn(t *testing.T, db *sql.DB, column string) bool {
	t.Helper()
	rows, err := db.Query(`SELECT ` + column + ` FROM attempts LIMIT 1`)
	if err != nil {
		return false
	}
	_ = rows.Close() // only whether the query was accepted matters
	return true
}

func recorded(t *testing.T, db *sql.DB, version int) bool {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}
