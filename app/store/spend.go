package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// SessionSpend is what one session's attempts of one model used, and when
// the session was admitted: a row of a day's spend, which the app prices
// (config.Server.ModelCost) and policy.MoneyBudget weighs (decision 0077).
type SessionSpend struct {
	SessionID  string
	RepoID     int64
	AdmittedAt time.Time
	// Model is the attempts' model; a session whose attempts ran two
	// models has a row for each.
	Model string
	Usage Usage
}

// DaySpend is the usage of every session the installation admitted after
// since, by session and model, whether it has ended or not: the spend of
// the day's window that policy.MoneyBudget counts. Sessions that used no
// model have no row.
func (s *Store) DaySpend(ctx context.Context, installationID int64, since time.Time) ([]SessionSpend, error) {
	return daySpend(ctx, s.db, installationID, since)
}

// rowsQuerier is a *sql.DB or a *sql.Tx, for a query of many rows
// (daySpend, querySessionsOn).
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func daySpend(ctx context.Context, q rowsQuerier, installationID int64, since time.Time) ([]SessionSpend, error) {
	rows, err := q.QueryContext(ctx, `SELECT s.id, s.repo_id, s.admitted_at, a.model, `+sumUsageColumns+`
		FROM sessions s JOIN attempts a ON a.session_id = s.id
		WHERE s.installation_id = $1 AND s.admitted_at > $2
		GROUP BY s.id, s.repo_id, s.admitted_at, a.model
		HAVING COALESCE(SUM(total_tokens), 0) > 0
		ORDER BY s.admitted_at, s.id, a.model`, installationID, ms(since))
	if err != nil {
		return nil, fmt.Errorf("reading the day's spend: %w", err)
	}
	defer rows.Close() // read-only; Err below reports what matters
	var out []SessionSpend
	for rows.Next() {
		var sp SessionSpend
		var admitted int64
		if err := rows.Scan(append([]any{&sp.SessionID, &sp.RepoID, &admitted, &sp.Model}, sp.Usage.scan()...)...); err != nil {
			return nil, fmt.Errorf("reading the day's spend: %w", err)
		}
		sp.AdmittedAt = fromMS(admitted)
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the day's spend: %w", err)
	}
	return out, nil
}

// PricedSpends are rows priced by cost (config.Server.ModelCost, the one
// function that prices tokens), as policy.MoneyBudget weighs them. A row
// whose model cost does not price (no prices set, or an attempt from
// before its model was stored) costs nothing.
func PricedSpends(rows []SessionSpend, cost func(model string, u contract.TokenUsage) (float64, bool)) []policy.Spend {
	out := make([]policy.Spend, 0, len(rows))
	for _, r := range rows {
		usd, ok := cost(r.Model, r.Usage.Tokens())
		if !ok {
			continue
		}
		out = append(out, policy.Spend{RepoID: r.RepoID, StartedAt: r.AdmittedAt, USD: usd})
	}
	return out
}
