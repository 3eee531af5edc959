// Package storetest opens fresh stores for tests: a SQLite file in a temp
// directory, or a private schema in the PostgreSQL at
// INSPECT_TEST_POSTGRES_DSN (default: the local test database). PostgreSQL
// being down is a test failure, never a skip: CI must prove both drivers.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/inspecthq/inspect/app/store"
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver, for creating schemas
)

// Drivers are the store drivers every store test runs against.
var Drivers = []string{"sqlite", "postgres"}

// PostgresDSN is the server the PostgreSQL tests use.
func PostgresDSN() string {
	if v := os.Getenv("INSPECT_TEST_POSTGRES_DSN"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// DSN returns a fresh, empty database for driver: a file path for sqlite,
// a DSN pinned to a new schema (dropped at cleanup) for postgres.
func DSN(t testing.TB, driver string) string {
	t.Helper()
	switch driver {
	case "sqlite":
		return filepath.Join(t.TempDir(), "inspect.db")
	case "postgres":
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on Linux
		schema := "t_" + hex.EncodeToString(b[:])
		admin, err := sql.Open("pgx", PostgresDSN())
		if err != nil {
			t.Fatalf("postgres: %v", err)
		}
		defer admin.Close()
		if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
			t.Fatalf("postgres at %s is required for the store tests (start it with .ci/ensure-postgres): %v", PostgresDSN(), err)
		}
		t.Cleanup(func() {
			cleanup, err := sql.Open("pgx", PostgresDSN())
			if err != nil {
				t.Errorf("postgres cleanup: %v", err)
				return
			}
			defer cleanup.Close()
			if _, err := cleanup.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
				t.Errorf("dropping %s: %v", schema, err)
			}
		})
		u, err := url.Parse(PostgresDSN())
		if err != nil {
			t.Fatalf("INSPECT_TEST_POSTGRES_DSN: %v", err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	t.Fatalf("unknown driver %q", driver)
	return ""
}

// MigratedDSN is DSN already at the current schema, for tests of what
// runs over a store rather than of its migrations (app/store's own tests
// migrate from nothing). On SQLite it is a copy of one file store.Open
// migrated once per test process: a fresh migration costs about half a
// second under -race (every ALTER makes SQLite parse the whole schema
// again), the copy and the reopening a tenth of that, and the app's
// end-to-end tests open a few hundred stores. On PostgreSQL it is DSN:
// the migration runs in the server.
func MigratedDSN(t testing.TB, driver string) string {
	t.Helper()
	if driver != "sqlite" {
		return DSN(t, driver)
	}
	template, err := migratedSQLite()
	if err != nil {
		t.Fatalf("migrating the template SQLite store: %v", err)
	}
	path := DSN(t, driver)
	if err := os.WriteFile(path, template, 0o600); err != nil {
		t.Fatalf("copying the template SQLite store: %v", err)
	}
	return path
}

// migratedSQLite is the template's content (a few hundred kilobytes), made
// on first use. It is kept in memory, so no file outlives the process.
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "inspect-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // a leftover temp dir is harmless
	path := filepath.Join(dir, "inspect.db")
	st, err := store.Open(context.Background(), "sqlite", path)
	if err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the WAL into the file and
	// removes it, so the file alone is the whole database.
	if err := st.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the template's WAL is still there after closing it (%v)", err)
	}
	return os.ReadFile(path)
})

// OpenMigrated is Open on MigratedDSN: a fresh store for driver, already
// at the current schema, closed at cleanup.
func OpenMigrated(t testing.TB, driver string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), driver, MigratedDSN(t, driver))
	if err != nil {
		t.Fatalf("opening %s store: %v", driver, err)
	}
	t.Cleanup(func() { _ = s.Close() }) // a close error after the test has no reader
	return s
}

// Open returns a fresh store for driver, closed at cleanup.
func Open(t testing.TB, driver string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), driver, DSN(t, driver))
	if err != nil {
		t.Fatalf("opening %s store: %v", driver, err)
	}
	t.Cleanup(func() { _ = s.Close() }) // a close error after the test has no reader
	return s
}
