package channel

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/metrics"
	"github.com/inspecthq/inspect/app/modelproxy"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
)

// The model route: a model request arrives on the session channel's egress
// route with the attempt's session token, and the model proxy
// (app/modelproxy) relays it for the attempt's spec. Its tokens are counted
// in the store, for the whole session, and the session ends when they pass
// its budget (storeMeter).

func (c *Channel) handleEgressModel(rw http.ResponseWriter, r *http.Request, a store.Attempt) {
	w := liftTimeouts(rw, c.egressIdle)
	log := c.attemptLog(r.Context(), a)
	refuse := func(status int, why string) {
		log.Warn().Str("provider", r.PathValue(contract.PathValueProvider)).Str("why", why).Msg("model request refused")
		contract.WriteError(w, status, contract.ErrorInvalid, why)
	}
	if a.Kind == string(contract.KindSnapshot) || a.Kind == string(contract.KindBaseline) {
		refuse(http.StatusForbidden, "snapshot builds and baselines reach no model")
		return
	}
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		refuse(http.StatusServiceUnavailable, "the attempt's spec is unreadable")
		return
	}
	c.models.Serve(w, r, spec, &storeMeter{c: c, a: a, log: log, model: spec.Agent.Model}, *log)
}

// storeMeter is the app's modelproxy.Meter: the session's usage in the
// store (across its attempts), its budget agents.token_budget.
type storeMeter struct {
	c   *Channel
	a   store.Attempt
	log *zerolog.Logger
	// model is the spec's, the only one the proxy lets a request name.
	model string
}

// reservationInFlightFor is how long a reservation takes one of its
// session's slots for requests in flight: past the model client's own
// timeout its request is gone (its replica died with it), and the slot is
// free again, though the reservation stays charged.
const reservationInFlightFor = 35 * time.Minute

func (m *storeMeter) Reserve(ctx context.Context, tokens int64) (modelproxy.Reservation, *modelproxy.Refusal) {
	id := contract.NewSecret()[:24]
	lim := store.ReserveLimits{Budget: m.c.tokenBudget, MaxInFlight: m.c.maxInFlight, InFlightFor: reservationInFlightFor, Money: m.c.moneyBudget()}
	got, err := m.c.store.ReserveModelTokens(ctx, m.a.ID, id, tokens, lim, m.c.clock.Now())
	if err != nil {
		m.log.Error().Err(err).Msg("reserving model tokens failed")
		return modelproxy.Reservation{}, &modelproxy.Refusal{Status: http.StatusServiceUnavailable, Why: "try again", RetryAfter: 1}
	}
	switch got.Refused {
	case store.ReserveBudgetSpent:
		m.c.budget.EndForBudget(ctx, m.a, got.Used, m.c.tokenBudget)
		return modelproxy.Reservation{}, modelproxy.BudgetSpent(m.c.tokenBudget)
	case store.ReserveMoneySpent:
		m.c.budget.EndForMoneyBudget(ctx, m.a, got.Money)
		return modelproxy.Reservation{}, modelproxy.MoneySpent()
	case store.ReserveBudgetHeld:
		return modelproxy.Reservation{}, modelproxy.BudgetHeld(m.c.tokenBudget)
	case store.ReserveTooMany:
		return modelproxy.Reservation{}, modelproxy.TooManyInFlight(m.c.maxInFlight)
	}
	return modelproxy.Reservation{ID: id, Tokens: tokens}, nil
}

func (m *storeMeter) Settle(ctx context.Context, r modelproxy.Reservation, u modelproxy.Usage) {
	m.c.metrics.ModelTokens(m.model, metrics.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens, CacheWrite: u.CacheWriteTokens})
	total, err := m.c.store.SettleModelTokens(ctx, r.ID, store.Usage(u), m.c.clock.Now())
	if err != nil {
		// The reservation stays in the store, charged: never less than
		// the request may have used.
		m.log.Error().Err(err).Msg("settling the token usage failed")
		return
	}
	if budget := m.c.tokenBudget; budget > 0 && total.TotalTokens > budget {
		m.c.budget.EndForBudget(ctx, m.a, total, budget)
	}
}

// moneyBudget is the reservations' weighing of the day's spend against the
// server's money budgets (decision 0077), nil when there are none. A
// repository's narrower limits.daily_money is kept at admission only: the
// proxy has the server's config, not the repository's.
func (c *Channel) moneyBudget() func(repoID int64, spends []store.SessionSpend, now time.Time) policy.Decision {
	if c.cost == nil || c.money.DailyMoneyPerRepo <= 0 && c.money.DailyMoneyPerInstallation <= 0 {
		return nil
	}
	return func(repoID int64, spends []store.SessionSpend, now time.Time) policy.Decision {
		return policy.MoneyBudget(c.money, repoID, store.PricedSpends(spends, c.cost), now, "")
	}
}
