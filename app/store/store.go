// Package store is Inspect's durable state: deliveries, sessions, the work
// queue with leases, and the repo-config cache. SQLite (one file, the
// embedded default) and PostgreSQL (several replicas) run the same queries.
//
// The store keeps no clock: callers pass the time, so tests drive it with a
// fake clock.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver (no cgo)
)

type dialect int

const (
	sqlite dialect = iota
	postgres
)

// Store is safe for concurrent use.
type Store struct {
	db *sql.DB
	// reader serves reads that need no transaction. For SQLite it is a
	// separate read-only pool, so the request path's cache lookups never
	// queue behind the single writer connection (WAL lets them run at once).
	reader  *sql.DB
	dialect dialect
	batch   acceptBatcher
	accept  acceptStmts
	rollup  rollupStmts
	memo    configMemo
	// ended, when set, is told of each session a mutation ended, after
	// the commit (for the session-duration metric).
	ended atomic.Pointer[func(Session)]
}

// OnSessionEnded has fn called, after the commit, with each session a
// MutateSession or Admit moves to done. fn must not block.
func (s *Store) OnSessionEnded(fn func(Session)) { s.ended.Store(&fn) }

func (s *Store) tellEnded(sess Session) {
	if fn := s.ended.Load(); fn != nil {
		(*fn)(sess)
	}
}

// Open connects and migrates. For sqlite the DSN is a file path; the
// connection is set up so that every commit is synced to disk before it
// returns (WAL with synchronous=FULL), which the webhook's 2xx relies on.
func Open(ctx context.Context, driver, dsn string) (*Store, error) {
	var (
		db  *sql.DB
		d   dialect
		err error
	)
	switch driver {
	case "sqlite":
		d = sqlite
		db, err = sql.Open("sqlite", sqliteDSN(dsn, false))
		if err == nil {
			// One connection: SQLite allows one writer anyway, and a single
			// connection never meets SQLITE_BUSY. Accept's group commit keeps
			// throughput up despite it.
			db.SetMaxOpenConns(1)
		}
	case "postgres":
		d = postgres
		db, err = sql.Open("pgx", dsn)
		if err == nil {
			db.SetMaxOpenConns(16)
			db.SetConnMaxIdleTime(time.Minute)
		}
	default:
		return nil, fmt.Errorf("unknown database driver %q", driver)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", driver, err)
	}
	s := &Store{db: db, reader: db, dialect: d}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close() // the migration error is the one worth reporting
		return nil, err
	}
	if d == sqlite {
		// Opened after the migration, so the file and WAL mode exist.
		reader, err := sql.Open("sqlite", sqliteDSN(dsn, true))
		if err != nil {
			_ = db.Close() // the open error is the one worth reporting
			return nil, err
		}
		reader.SetMaxOpenConns(8)
		s.reader = reader
	}
	if err := s.prepareAccept(ctx); err != nil {
		_ = s.Close() // the prepare error is the one worth reporting
		return nil, err
	}
	if err := s.prepareRollups(ctx); err != nil {
		_ = s.Close() // the prepare error is the one worth reporting
		return nil, err
	}
	return s, nil
}

func sqliteDSN(path string, readOnly bool) string {
	// Always a plain path (config refuses URIs): the pragmas below are what
	// make an acknowledgement durable, so nothing may replace them.
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)"
	if readOnly {
		return dsn + "&_pragma=query_only(1)"
	}
	// WAL with synchronous=FULL syncs every commit before it returns.
	// wal_autocheckpoint stays at its default on purpose: a larger WAL grows
	// the file on most commits, and a sync that also extends the file costs
	// a third more than one that overwrites (measured here; BENCHMARKS.md).
	return dsn + "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
}

// migrate creates the base schema (idempotent statements), then applies
// each numbered migration not yet recorded in schema_migrations. On
// PostgreSQL the whole of it runs under a session advisory lock on one
// connection, so replicas that start together take turns instead of racing
// on CREATE TABLE.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	defer conn.Close()
	if s.dialect == postgres {
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(4242001)`); err != nil {
			return fmt.Errorf("migrating: %w", err)
		}
		defer func() {
			// Closing the connection would release it too; unlock explicitly
			// so a pooled connection never keeps it.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(4242001)`)
		}()
	}
	for _, stmt := range schema(s.dialect) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("migrating: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	for i, steps := range migrations(s.dialect) {
		version := i + 2 // version 1 is the base schema
		if err := applyMigration(ctx, conn, version, steps); err != nil {
			return fmt.Errorf("migration %d: %w", version, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, conn *sql.Conn, version int, steps []string) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // after Commit this is a no-op
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil || n > 0 {
		return err
	}
	for _, stmt := range steps {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, version); err != nil {
		return err
	}
	return tx.Commit()
}

// Ping reports whether the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// Close closes the database.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.reader != s.db {
		if rerr := s.reader.Close(); err == nil {
			err = rerr
		}
	}
	return err
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // fn's error is the one that matters
		return err
	}
	return tx.Commit()
}

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("not found")

// acceptBatcher serialises Accept calls into group commits.
type acceptBatcher struct {
	mu         sync.Mutex
	pending    []*acceptReq
	committing bool
}
