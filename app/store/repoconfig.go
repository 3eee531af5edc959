package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"
)

// RepoConfigStatus says what the cache knows of a repo's config.
type RepoConfigStatus string

// The cache statuses.
const (
	// ConfigFile means a file was found and parsed; Content holds it.
	ConfigFile RepoConfigStatus = "file"
	// ConfigDefaults means no file exists: defaults apply.
	ConfigDefaults RepoConfigStatus = "defaults"
	// ConfigInvalid means a file exists but does not parse.
	ConfigInvalid RepoConfigStatus = "invalid"
)

// RepoConfigEntry is one cached repo config.
type RepoConfigEntry struct {
	RepoID    int64
	FullName  string
	Status    RepoConfigStatus
	Source    string // owner/name@ref of the file it came from
	Content   string
	Error     string
	FetchedAt time.Time
}

const cachedConfigSQL = `SELECT repo_id, full_name, status, source, content, error, fetched_at
	FROM repo_configs WHERE repo_id = $1`

// ConfigMemoTTL bounds how long this process reuses a cache row it read
// without reading it again. The webhook path reads the cache on every
// command, and the read was a tenth of the acknowledgement's CPU time. Writes
// through this store drop the memo at once, so only another replica's
// refresh can take up to this long to be seen here.
const ConfigMemoTTL = 2 * time.Second

type configMemo struct {
	mu      sync.Mutex
	entries map[int64]memoEntry
	// gen counts invalidations, so a read that raced with a write does not
	// put its stale row back after the write dropped the memo.
	gen uint64
}

type memoEntry struct {
	entry RepoConfigEntry
	found bool
	until time.Time
}

func (m *configMemo) get(repoID int64, now time.Time) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[repoID]
	if !ok || !now.Before(e.until) {
		return memoEntry{}, false
	}
	return e, true
}

func (m *configMemo) generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gen
}

func (m *configMemo) put(repoID int64, e memoEntry, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return
	}
	if m.entries == nil || len(m.entries) > 100_000 {
		m.entries = map[int64]memoEntry{} // bounded: start over rather than grow forever
	}
	m.entries[repoID] = e
}

func (m *configMemo) forgetAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = nil
	m.gen++
}

// CachedRepoConfig returns the cached entry as of now; found is false on a
// miss.
func (s *Store) CachedRepoConfig(ctx context.Context, repoID int64, now time.Time) (RepoConfigEntry, bool, error) {
	if e, ok := s.memo.get(repoID, now); ok {
		return e.entry, e.found, nil
	}
	gen := s.memo.generation()
	entry, found, err := s.readRepoConfig(ctx, repoID)
	if err != nil {
		return RepoConfigEntry{}, false, err
	}
	s.memo.put(repoID, memoEntry{entry: entry, found: found, until: now.Add(ConfigMemoTTL)}, gen)
	return entry, found, nil
}

func (s *Store) readRepoConfig(ctx context.Context, repoID int64) (entry RepoConfigEntry, found bool, err error) {
	var status string
	var fetched int64
	err = s.accept.cachedConfig.QueryRowContext(ctx, repoID).
		Scan(&entry.RepoID, &entry.FullName, &status, &entry.Source, &entry.Content, &entry.Error, &fetched)
	if errors.Is(err, sql.ErrNoRows) {
		return RepoConfigEntry{}, false, nil
	}
	if err != nil {
		return RepoConfigEntry{}, false, err
	}
	entry.Status = RepoConfigStatus(status)
	entry.FetchedAt = fromMS(fetched)
	return entry, true, nil
}

// PutRepoConfig stores a freshly fetched config, replacing an older one.
// FetchedAt must be when the fetch started: a fetch that started before the
// stored one's never overwrites it, whichever finishes last.
func (s *Store) PutRepoConfig(ctx context.Context, e RepoConfigEntry) error {
	defer s.memo.forgetAll()
	_, err := s.db.ExecContext(ctx, `INSERT INTO repo_configs (repo_id, full_name, status, source, content, error, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (repo_id) DO UPDATE SET full_name = excluded.full_name, status = excluded.status,
			source = excluded.source, content = excluded.content, error = excluded.error, fetched_at = excluded.fetched_at
		WHERE excluded.fetched_at >= repo_configs.fetched_at`,
		e.RepoID, e.FullName, string(e.Status), e.Source, e.Content, e.Error, ms(e.FetchedAt))
	return err
}

// ForgetOwnerDefaults drops cached entries of owner's repos that did not
// come from their own file: an org-wide config changed, so those are stale.
// A miss makes the next trigger accept and re-read.
func (s *Store) ForgetOwnerDefaults(ctx context.Context, owner string) error {
	defer s.memo.forgetAll()
	_, err := s.db.ExecContext(ctx, `DELETE FROM repo_configs
		WHERE LOWER(full_name) LIKE LOWER($1) ESCAPE '\' AND (status = 'defaults' OR LOWER(source) LIKE LOWER($2) ESCAPE '\')`,
		escapeLike(owner)+"/%", escapeLike(owner)+"/.github@%")
	return err
}

// escapeLike quotes LIKE's metacharacters (Enterprise Managed Users have
// logins with underscores) for use with ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
