package channel

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/modelproxy"
	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/runner/contract"
)

// The model route: a model request arrives on the session channel's egress
// route with the attempt's session token, and the model proxy
// (app/modelproxy) relays it for the attempt's spec. Its tokens are counted
// in the store, for the whole session, and the session ends when they pass
// its budget (storeMeter).

func (c *Channel) handleEgressModel(rw http.ResponseWriter, r *http.Request) {
	w := liftTimeouts(rw, c.egressIdle)
	a := attemptOf(r)
	log := c.channelLog(r)
	refuse := func(status int, why string) {
		log.Warn().Str("provider", r.PathValue(contract.PathValueProvider)).Str("why", why).Msg("model request refused")
		contract.WriteError(w, status, contract.ErrorInvalid, why)
	}
	if a.Kind == string(contract.KindSnapshot) {
		refuse(http.StatusForbidden, "snapshot builds reach no model")
		return
	}
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		refuse(http.StatusServiceUnavailable, "the attempt's spec is unreadable")
		return
	}
	c.models.Serve(w, r, spec, &storeMeter{c: c, a: a, log: log}, *log)
}

// storeMeter is the app's modelproxy.Meter: the session's usage in the
// store (across its attempts), its budget agents.token_budget.
type storeMeter struct {
	c   *Channel
	a   store.Attempt
	log *zerolog.Logger
}

func (m *storeMeter) Admit(ctx context.Context) *modelproxy.Refusal {
	used, err := m.c.store.SessionUsage(ctx, m.a.ID)
	if err != nil {
		return &modelproxy.Refusal{Status: http.StatusServiceUnavailable, Why: "try again"}
	}
	if budget := m.c.tokenBudget; budget > 0 && used.TotalTokens >= budget {
		m.c.engine.EndForBudget(ctx, m.a, used, budget)
		return &modelproxy.Refusal{Status: http.StatusTooManyRequests, Why: "the session's token budget is spent"}
	}
	return nil
}

func (m *storeMeter) Record(ctx context.Context, u modelproxy.Usage) {
	total, err := m.c.store.AddUsage(ctx, m.a.ID, store.Usage(u), m.c.clock.Now())
	if err != nil {
		m.log.Error().Err(err).Msg("recording the token usage failed")
		return
	}
	if budget := m.c.tokenBudget; budget > 0 && total.TotalTokens > budget {
		m.c.engine.EndForBudget(ctx, m.a, total, budget)
	}
}
