package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/inspecthq/inspect/contract"
)

// BuildSnapshot is the work that builds one repo's snapshot; its payload
// is the repo id.
const BuildSnapshot WorkKind = "build_snapshot"

// CollectSnapshots garbage-collects one repo's old snapshots after a new
// one; its payload is the repo id.
const CollectSnapshots WorkKind = "collect_snapshots"

// SnapshotRepo is a repo that wants snapshot images, and its schedule.
type SnapshotRepo struct {
	RepoID         int64
	FullName       string
	InstallationID int64
	NextBuildAt    time.Time
	// BuildingUntil is when a build that started may be presumed dead:
	// until then no other starts, so a repo has one build at a time.
	BuildingUntil time.Time
	// LastDigest is the newest snapshot, built at LastBuiltAt from
	// LastSHA, the head of LastBranch (the default branch) then; LastSize
	// and LastLayers are its layers' compressed bytes and count.
	LastDigest  string
	LastBuiltAt time.Time
	LastSHA     string
	LastBranch  string
	LastSize    int64
	LastLayers  int
	// LastError is why the last build failed ("" when it succeeded);
	// LastFinishedAt is when it ended, and LastLog the tail of its setup
	// output, redacted ("" when no setup command ran).
	LastError      string
	LastFinishedAt time.Time
	LastLog        string
	// LastEgress is the last build's egress audit: the registry requests
	// its setup made and the refusals, their paths untrusted (nil when
	// setup sent nothing, or the build predates migration 17).
	LastEgress *contract.EgressAudit
	// BuildingAttempt is the executor attempt building it (Buildkite), ""
	// for a build in the app's process; only its result counts.
	BuildingAttempt string
}

// SnapshotOutcome is how one build ended, as FinishSnapshotBuild records
// it: a snapshot (Digest and what goes with it), or Error; and either way
// the build's Log and its Egress audit (nil for none).
type SnapshotOutcome struct {
	Digest, SHA, Branch string
	Size                int64
	Layers              int
	Error               string
	Log                 string
	Egress              *contract.EgressAudit
}

// WantSnapshots records that a repo wants snapshots (its config has a
// snapshot section). A repo new to the list is due at once; one already
// there keeps its schedule.
func (s *Store) WantSnapshots(ctx context.Context, repoID int64, fullName string, installationID int64, now time.Time) error {
	q := `INSERT INTO snapshot_repos (repo_id, full_name, installation_id, next_build_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (repo_id) DO UPDATE SET full_name = excluded.full_name, installation_id = excluded.installation_id, updated_at = excluded.updated_at`
	_, err := s.db.ExecContext(ctx, q, repoID, fullName, installationID, ms(now))
	return err
}

// ForgetSnapshots drops a repo from the schedule (its config no longer
// asks for snapshots). Its images stay until garbage-collected.
func (s *Store) ForgetSnapshots(ctx context.Context, repoID int64) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM snapshot_repos WHERE repo_id = $1`, repoID)
	return err
}

// SnapshotSoon brings a repo's next build forward to at (a push to its
// default branch, debounced by the caller's choice of at); a build already
// due sooner keeps its time. A repo not in the list is ignored.
func (s *Store) SnapshotSoon(ctx context.Context, repoID int64, at time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE snapshot_repos SET next_build_at = $2 WHERE repo_id = $1 AND next_build_at > $2`, repoID, ms(at))
	return err
}

// ScheduleSnapshotBuilds queues builds for repos that are due, so that at
// most maxBuilding are building across the fleet, in one transaction: each
// gets building_until = now+lease and next_build_at = now+every, so two
// replicas never queue the same repo's build. (The build moves
// building_until on when it starts: StartSnapshotBuild.) It returns how
// many it queued.
func (s *Store) ScheduleSnapshotBuilds(ctx context.Context, now time.Time, every, lease time.Duration, maxBuilding int) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgres {
			// One scheduler at a time: the count below must not race.
			if _, err := tx.ExecContext(ctx, `LOCK TABLE snapshot_repos IN SHARE ROW EXCLUSIVE MODE`); err != nil {
				return err
			}
		}
		var building int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM snapshot_repos WHERE building_until > $1`, ms(now)).Scan(&building); err != nil {
			return err
		}
		limit := maxBuilding - building
		if limit <= 0 {
			return nil
		}
		q := `SELECT repo_id FROM snapshot_repos WHERE next_build_at <= $1 AND building_until <= $1 ORDER BY next_build_at LIMIT $2`
		rows, err := tx.QueryContext(ctx, q, ms(now), limit)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close() // the scan error is the one to report
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE snapshot_repos SET building_until = $2, next_build_at = $3, updated_at = $4 WHERE repo_id = $1`,
				id, ms(now.Add(lease)), ms(now.Add(every)), ms(now)); err != nil {
				return err
			}
			if err := s.insertWork(ctx, tx, NewWork{Kind: BuildSnapshot, Payload: strconv.FormatInt(id, 10)}, now); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// StartSnapshotBuild marks a repo building until until, as its build
// starts (a queued build may wait for a worker).
func (s *Store) StartSnapshotBuild(ctx context.Context, repoID int64, until, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE snapshot_repos SET building_until = $2, building_attempt = '', updated_at = $3 WHERE repo_id = $1`, repoID, ms(until), ms(now))
	return err
}

// SetSnapshotAttempt records which executor attempt builds the repo now:
// a result from any other (an older build that outlived its lease) is not
// recorded on the schedule.
func (s *Store) SetSnapshotAttempt(ctx context.Context, repoID int64, attemptID string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE snapshot_repos SET building_attempt = $2, updated_at = $3 WHERE repo_id = $1`, repoID, attemptID, ms(now))
	return err
}

const snapshotRepoColumns = `repo_id, full_name, installation_id, next_build_at, building_until, last_digest, last_built_at, last_error, building_attempt,
	last_sha, last_branch, last_size, last_layers, last_finished_at, last_log, last_egress`

func scanSnapshotRepo(row interface{ Scan(...any) error }) (SnapshotRepo, error) {
	var (
		r                               SnapshotRepo
		next, building, built, finished int64
		egress                          string
	)
	if err := row.Scan(&r.RepoID, &r.FullName, &r.InstallationID, &next, &building, &r.LastDigest, &built, &r.LastError, &r.BuildingAttempt,
		&r.LastSHA, &r.LastBranch, &r.LastSize, &r.LastLayers, &finished, &r.LastLog, &egress); err != nil {
		return SnapshotRepo{}, err
	}
	r.NextBuildAt, r.BuildingUntil, r.LastBuiltAt, r.LastFinishedAt = fromMS(next), fromMS(building), fromMS(built), fromMS(finished)
	if egress != "" {
		r.LastEgress = &contract.EgressAudit{}
		if err := json.Unmarshal([]byte(egress), r.LastEgress); err != nil {
			return SnapshotRepo{}, fmt.Errorf("snapshot repo %d: its last build's egress audit: %w", r.RepoID, err)
		}
	}
	return r, nil
}

// GetSnapshotRepo reads one repo's schedule.
func (s *Store) GetSnapshotRepo(ctx context.Context, repoID int64) (SnapshotRepo, error) {
	r, err := scanSnapshotRepo(s.db.QueryRowContext(ctx, `SELECT `+snapshotRepoColumns+` FROM snapshot_repos WHERE repo_id = $1`, repoID))
	if errors.Is(err, sql.ErrNoRows) {
		return SnapshotRepo{}, fmt.Errorf("snapshot repo %d: %w", repoID, ErrNotFound)
	}
	return r, err
}

// SnapshotRepos lists the schedules of the repos among ids that want
// snapshots, by name (the dashboard's snapshots page).
func (s *Store) SnapshotRepos(ctx context.Context, ids []int64) ([]SnapshotRepo, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in := make([]string, len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		in[i], args[i] = fmt.Sprintf("$%d", i+1), id
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+snapshotRepoColumns+` FROM snapshot_repos WHERE repo_id IN (`+strings.Join(in, ", ")+`) ORDER BY full_name`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SnapshotRepo
	for rows.Next() {
		r, err := scanSnapshotRepo(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// FinishSnapshotBuild records a build's end: its snapshot, or its error
// (the previous snapshot stays the latest), and its log either way. Then
// the repo may build again.
func (s *Store) FinishSnapshotBuild(ctx context.Context, repoID int64, o SnapshotOutcome, now time.Time) error {
	return finishSnapshotBuild(ctx, s.db, repoID, "", o, now)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func finishSnapshotBuild(ctx context.Context, db execer, repoID int64, attemptID string, o SnapshotOutcome, now time.Time) error {
	// Like the log, the audit is the last build's, whatever its outcome.
	egress := ""
	if !o.Egress.Empty() {
		b, err := json.Marshal(o.Egress)
		if err != nil {
			return fmt.Errorf("snapshot repo %d: encoding the build's egress audit: %w", repoID, err)
		}
		egress = string(b)
	}
	q := `UPDATE snapshot_repos SET building_until = 0, building_attempt = '', last_error = $2, last_log = $3, last_finished_at = $4, updated_at = $4, last_egress = $6
		WHERE repo_id = $1 AND building_attempt = $5`
	args := []any{repoID, o.Error, o.Log, ms(now), attemptID, egress}
	if o.Digest != "" {
		q = `UPDATE snapshot_repos SET building_until = 0, building_attempt = '', last_error = '', last_log = $3, last_finished_at = $4, updated_at = $4,
			last_digest = $2, last_built_at = $4, last_sha = $6, last_branch = $7, last_size = $8, last_layers = $9, last_egress = $10
			WHERE repo_id = $1 AND building_attempt = $5`
		args = []any{repoID, o.Digest, o.Log, ms(now), attemptID, o.SHA, o.Branch, o.Size, o.Layers, egress}
	}
	_, err := db.ExecContext(ctx, q, args...)
	return err
}
