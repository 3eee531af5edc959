package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/policy"
)

// reservationLockClass is the first key of the PostgreSQL advisory lock a
// reservation holds for its transaction; the second is a hash of the
// session id, so one session's requests take turns across replicas while
// other sessions' do not wait.
const reservationLockClass = 4242017

// Why a reservation was refused. Spent means the session's settled usage
// has reached its budget: it is over. Held means what is left of the
// budget is reserved by requests still in flight: one may settle for less
// than it reserved, so the request may be retried when one ends, and the
// session goes on.
//
// MoneySpent means the session's repository or installation has spent a
// day's money budget (decision 0077): it is over too.
const (
	ReserveMoneySpent  = "money_spent"
	ReserveBudgetSpent = "budget_spent"
	ReserveBudgetHeld  = "budget_held"
	ReserveTooMany     = "too_many_in_flight"
)

// ReserveLimits are what a reservation is held to: the session's token
// budget (0: none), its requests in flight (0: no cap), and how long a
// reservation counts as in flight (one whose request died with its replica
// stops taking a slot then, but stays charged).
type ReserveLimits struct {
	Budget      int64
	MaxInFlight int
	InFlightFor time.Duration
	// Money, when set, weighs the day's spend of the session's
	// installation (DaySpend over the 24 hours before now) for the
	// session's repository, and refuses the reservation
	// (ReserveMoneySpent) when its decision is not Allowed
	// (policy.MoneyBudget). nil: no money budget, and no spend is read.
	Money func(repoID int64, spends []SessionSpend, now time.Time) policy.Decision
}

// Reserved is a reservation's outcome: Refused ("" when it was taken, else
// ReserveBudgetSpent, ReserveBudgetHeld or ReserveTooMany), and the session's usage so far
// and its outstanding reservations (before this one).
type Reserved struct {
	Refused  string
	Used     Usage
	Reserved int64
	InFlight int
	// Money is the money budget's refusal (ReserveMoneySpent).
	Money policy.Decision
}

// ReserveModelTokens reserves tokens for one model request of the
// attempt's session, under id, unless the session's usage plus its
// outstanding reservations has reached the budget or its requests in
// flight are at the cap, or (lim.Money) its repository's or installation's
// day's spend has reached a money budget. So however many requests race,
// the session spends at most its budget plus one reservation.
func (s *Store) ReserveModelTokens(ctx context.Context, attemptID, id string, tokens int64, lim ReserveLimits, now time.Time) (Reserved, error) {
	var out Reserved
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var sessionID string
		var repoID, installationID int64
		if err := tx.QueryRowContext(ctx, `SELECT a.session_id, COALESCE(s.repo_id, 0), COALESCE(s.installation_id, 0)
				FROM attempts a LEFT JOIN sessions s ON s.id = a.session_id WHERE a.id = $1`, attemptID).Scan(&sessionID, &repoID, &installationID); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		if s.dialect == postgres {
			// Serialise one session's reservations across replicas; SQLite's
			// transactions begin immediate, which does the same.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, reservationLockClass, keyHash(sessionID)); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT `+sumUsageColumns+` FROM attempts WHERE session_id = $1`, sessionID).
			Scan(out.Used.scan()...); err != nil {
			return err
		}
		since := ms(now) - lim.InFlightFor.Milliseconds()
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(CASE WHEN created_at > $2 THEN 1 ELSE 0 END), 0)
				FROM model_reservations WHERE session_id = $1`, sessionID, since).Scan(&out.Reserved, &out.InFlight); err != nil {
			return err
		}
		if lim.Budget > 0 && out.Used.TotalTokens >= lim.Budget {
			out.Refused = ReserveBudgetSpent
			return nil
		}
		if lim.Money != nil {
			// The spend is what other sessions settled too, under their
			// own locks: sessions of one repository racing may each
			// spend one request past the budget (decision 0077).
			spends, err := daySpend(ctx, tx, installationID, now.Add(-24*time.Hour))
			if err != nil {
				return err
			}
			if d := lim.Money(repoID, spends, now); !d.Allowed {
				out.Refused, out.Money = ReserveMoneySpent, d
				return nil
			}
		}
		switch {
		case lim.Budget > 0 && out.Used.TotalTokens+out.Reserved >= lim.Budget:
			out.Refused = ReserveBudgetHeld
			return nil
		case lim.MaxInFlight > 0 && out.InFlight >= lim.MaxInFlight:
			out.Refused = ReserveTooMany
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO model_reservations (id, session_id, attempt_id, tokens, created_at) VALUES ($1, $2, $3, $4, $5)`,
			id, sessionID, attemptID, tokens, ms(now)); err != nil {
			return fmt.Errorf("reserving model tokens: %w", err)
		}
		return nil
	})
	return out, err
}

// SettleModelTokens replaces the reservation id with what its request
// used, added to its attempt, and returns the session's total. A
// reservation already settled adds nothing (settling twice charges once).
func (s *Store) SettleModelTokens(ctx context.Context, id string, u Usage, now time.Time) (Usage, error) {
	var attemptID string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `DELETE FROM model_reservations WHERE id = $1 RETURNING attempt_id`, id).Scan(&attemptID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, addUsage, append(append([]any{attemptID}, u.args()...), ms(now))...)
		return err
	})
	if err != nil {
		return Usage{}, err
	}
	return s.SessionUsage(ctx, attemptID)
}

// ModelReservations is the attempt's session's outstanding reservations:
// their tokens and how many there are.
func (s *Store) ModelReservations(ctx context.Context, attemptID string) (tokens int64, n int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(tokens), 0), COUNT(*) FROM model_reservations
		WHERE session_id = (SELECT session_id FROM attempts WHERE id = $1)`, attemptID).Scan(&tokens, &n)
	return tokens, n, err
}
