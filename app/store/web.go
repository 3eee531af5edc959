package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/inspecthq/inspect/session"
)

// The dashboard's rows (app/web, decision 0037): signed-in users' tokens,
// sealed by the caller, and browsers' sign-ins.

// WebUser is a GitHub user who signed in to the dashboard, with their
// user-to-server tokens sealed (app/web seals and opens them; the store
// only keeps what it is given).
type WebUser struct {
	UserID        int64
	Login         string
	TokenSealed   string
	RefreshSealed string
	// ExpiresAt is when the access token expires; zero when it never does
	// (an App with expiring user tokens turned off).
	ExpiresAt        time.Time
	RefreshExpiresAt time.Time
	UpdatedAt        time.Time
	// Version counts the writes of the user's tokens: a refresh is
	// written only over the version it refreshed (decision 0054).
	Version int64
	// RefreshClaimedUntil is the lease of the replica refreshing the
	// tokens now; zero when none is.
	RefreshClaimedUntil time.Time
}

// PutWebUser inserts or replaces a user's tokens (a sign-in): a new
// version, and any refresh under way is no longer the user's.
func (s *Store) PutWebUser(ctx context.Context, u WebUser) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO web_users (user_id, login, token_sealed, refresh_sealed, expires_at, refresh_expires_at, updated_at, version, refresh_claimed_until)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 0)
		ON CONFLICT (user_id) DO UPDATE SET login = excluded.login, token_sealed = excluded.token_sealed,
			refresh_sealed = excluded.refresh_sealed, expires_at = excluded.expires_at,
			refresh_expires_at = excluded.refresh_expires_at, updated_at = excluded.updated_at,
			version = web_users.version + 1, refresh_claimed_until = 0`,
		u.UserID, u.Login, u.TokenSealed, u.RefreshSealed, ms(u.ExpiresAt), ms(u.RefreshExpiresAt), ms(u.UpdatedAt))
	return err
}

// GetWebUser loads a user's tokens; ErrNotFound when they have none (never
// signed in, signed out, or revoked the App's authorization).
func (s *Store) GetWebUser(ctx context.Context, userID int64) (WebUser, error) {
	var u WebUser
	var exp, rexp, upd, claimed int64
	err := s.db.QueryRowContext(ctx, `SELECT user_id, login, token_sealed, refresh_sealed, expires_at, refresh_expires_at, updated_at, version, refresh_claimed_until
		FROM web_users WHERE user_id = $1`, userID).Scan(&u.UserID, &u.Login, &u.TokenSealed, &u.RefreshSealed, &exp, &rexp, &upd, &u.Version, &claimed)
	if errors.Is(err, sql.ErrNoRows) {
		return WebUser{}, fmt.Errorf("web user %d: %w", userID, ErrNotFound)
	}
	u.ExpiresAt, u.RefreshExpiresAt, u.UpdatedAt, u.RefreshClaimedUntil = fromMS(exp), fromMS(rexp), fromMS(upd), fromMS(claimed)
	return u, err
}

// ClaimWebUserRefresh makes this caller the one that refreshes the user's
// tokens of version, until now+lease: true when it is; false when another
// holds an unexpired claim, or the tokens are no longer that version (a
// refresh or a sign-in wrote newer ones: read them again). A refresh token
// is good once, so only the claim's holder may spend it; the claim is a
// compare-and-swap, never a lock held while GitHub answers (decision 0054).
func (s *Store) ClaimWebUserRefresh(ctx context.Context, userID, version int64, now time.Time, lease time.Duration) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE web_users SET refresh_claimed_until = $3
		WHERE user_id = $1 AND version = $2 AND refresh_claimed_until <= $4`, userID, version, ms(now.Add(lease)), ms(now))
	if err != nil {
		return false, fmt.Errorf("claiming the refresh of web user %d: %w", userID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RefreshedWebUser writes the tokens a refresh of version fromVersion got,
// as the next version, and ends the claim. False when the user's tokens
// are no longer fromVersion (signed in again, or forgotten, meanwhile):
// nothing is written.
func (s *Store) RefreshedWebUser(ctx context.Context, u WebUser, fromVersion int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE web_users SET token_sealed = $3, refresh_sealed = $4, expires_at = $5,
			refresh_expires_at = $6, updated_at = $7, version = version + 1, refresh_claimed_until = 0
		WHERE user_id = $1 AND version = $2`,
		u.UserID, fromVersion, u.TokenSealed, u.RefreshSealed, ms(u.ExpiresAt), ms(u.RefreshExpiresAt), ms(u.UpdatedAt))
	if err != nil {
		return false, fmt.Errorf("writing the refreshed tokens of web user %d: %w", u.UserID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseWebUserRefresh ends a claim on version whose refresh got nothing
// (GitHub did not answer, or answered 5xx), so that the next request, on
// any replica, tries again at once.
func (s *Store) ReleaseWebUserRefresh(ctx context.Context, userID, version int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE web_users SET refresh_claimed_until = 0 WHERE user_id = $1 AND version = $2`, userID, version)
	return err
}

// ForgetWebUserVersion forgets the user, as ForgetWebUser does, only if
// their tokens are still version: GitHub refused that version's refresh
// token, and no other replica or sign-in has written newer ones since.
// False when they had (nothing is deleted).
func (s *Store) ForgetWebUserVersion(ctx context.Context, userID, version int64) (bool, error) {
	var forgot bool
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM web_users WHERE user_id = $1 AND version = $2`, userID, version)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		forgot = true
		_, err = tx.ExecContext(ctx, `DELETE FROM web_logins WHERE user_id = $1`, userID)
		return err
	})
	return forgot, err
}

// ForgetWebUser deletes a user's tokens and every sign-in of theirs, in one
// transaction: signed out, or their authorization of the App revoked.
func (s *Store) ForgetWebUser(ctx context.Context, userID int64) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM web_logins WHERE user_id = $1`, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM web_users WHERE user_id = $1`, userID)
		return err
	})
}

// WebLogin is one browser's sign-in: IDHash is a hash of the secret in its
// cookie (the store never holds the cookie itself), CSRF the token every
// state-changing request of it must carry.
type WebLogin struct {
	IDHash    string
	UserID    int64
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateWebLogin stores a sign-in.
func (s *Store) CreateWebLogin(ctx context.Context, l WebLogin) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO web_logins (id_hash, user_id, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		l.IDHash, l.UserID, l.CSRF, ms(l.CreatedAt), ms(l.ExpiresAt))
	return err
}

// GetWebLogin loads a sign-in that has not expired at now; ErrNotFound
// otherwise.
func (s *Store) GetWebLogin(ctx context.Context, idHash string, now time.Time) (WebLogin, error) {
	var l WebLogin
	var created, expires int64
	err := s.reader.QueryRowContext(ctx, `SELECT id_hash, user_id, csrf, created_at, expires_at FROM web_logins
		WHERE id_hash = $1 AND expires_at > $2`, idHash, ms(now)).Scan(&l.IDHash, &l.UserID, &l.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return WebLogin{}, fmt.Errorf("web login: %w", ErrNotFound)
	}
	l.CreatedAt, l.ExpiresAt = fromMS(created), fromMS(expires)
	return l, err
}

// DeleteWebLogin ends one sign-in.
func (s *Store) DeleteWebLogin(ctx context.Context, idHash string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM web_logins WHERE id_hash = $1`, idHash)
	return err
}

// SessionFilter selects the dashboard's sessions list. RepoIDs is the
// repositories the viewer may read: none selects nothing. The rest narrow
// it when set. Before is the list's cursor: sessions older than that one
// (by created_at, then id), for the next page.
type SessionFilter struct {
	RepoIDs   []int64
	RepoID    int64
	State     session.State
	Outcome   session.Outcome
	Trigger   string
	Requester string
	Before    *Session
}

// ListSessions is one page of the sessions SessionFilter selects, newest
// first, at most limit.
func (s *Store) ListSessions(ctx context.Context, f SessionFilter, limit int) ([]Session, error) {
	if len(f.RepoIDs) == 0 {
		return nil, nil
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	in := make([]string, len(f.RepoIDs))
	for i, id := range f.RepoIDs {
		in[i] = arg(id)
	}
	where = append(where, "repo_id IN ("+strings.Join(in, ", ")+")")
	if f.RepoID != 0 {
		where = append(where, "repo_id = "+arg(f.RepoID))
	}
	if f.State != "" {
		where = append(where, "state = "+arg(string(f.State)))
	}
	if f.Outcome != "" {
		where = append(where, "outcome = "+arg(string(f.Outcome)))
	}
	if f.Trigger != "" {
		where = append(where, "trigger_kind = "+arg(f.Trigger))
	}
	if f.Requester != "" {
		where = append(where, "requester_login = "+arg(f.Requester))
	}
	if f.Before != nil {
		c, id := arg(ms(f.Before.CreatedAt)), arg(f.Before.ID)
		where = append(where, "(created_at < "+c+" OR (created_at = "+c+" AND id < "+id+"))")
	}
	return s.querySessions(ctx, "WHERE "+strings.Join(where, " AND ")+" ORDER BY created_at DESC, id DESC LIMIT "+arg(limit), args...)
}
