package modelproxy

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// Budget is a Meter in memory, for a session that lives in one process
// (`inspect run`): each request reserves its tokens before it goes and
// settles what the provider reported after; while what is used and
// reserved reaches the limit, or maxInFlight requests are out, it refuses
// more. Used alone reaching the limit is spent; used and reserved only is
// held (a request in flight may settle for less), and a retry may pass. The app's meter (app/channel) keeps the same in the store
// instead, across attempts and replicas.
type Budget struct {
	limit       int64
	maxInFlight int

	mu       sync.Mutex
	used     Usage
	reserved int64
	inFlight int
}

// NewBudget is a Budget of limit tokens (agents.token_budget; 0: none) and
// at most maxInFlight requests at once (agents.max_requests_in_flight; 0:
// no cap).
func NewBudget(limit int64, maxInFlight int) *Budget {
	return &Budget{limit: limit, maxInFlight: maxInFlight}
}

// Reserve takes tokens unless the limit or the cap is reached.
func (b *Budget) Reserve(_ context.Context, tokens int64) (Reservation, *Refusal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.used.TotalTokens >= b.limit {
		return Reservation{}, BudgetSpent(b.limit)
	}
	if b.limit > 0 && b.used.TotalTokens+b.reserved >= b.limit {
		return Reservation{}, BudgetHeld(b.limit)
	}
	if b.maxInFlight > 0 && b.inFlight >= b.maxInFlight {
		return Reservation{}, TooManyInFlight(b.maxInFlight)
	}
	b.reserved += tokens
	b.inFlight++
	return Reservation{Tokens: tokens}, nil
}

// Settle replaces a reservation with one answer's usage.
func (b *Budget) Settle(_ context.Context, r Reservation, u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved -= r.Tokens
	b.inFlight--
	b.used.InputTokens += u.InputTokens
	b.used.OutputTokens += u.OutputTokens
	b.used.TotalTokens += u.TotalTokens
	b.used.CacheReadTokens += u.CacheReadTokens
	b.used.CacheWriteTokens += u.CacheWriteTokens
	b.used.Requests += u.Requests
}

// Used is what the session's requests used so far.
func (b *Budget) Used() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Spent reports whether what the session used has reached the limit.
func (b *Budget) Spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit > 0 && b.used.TotalTokens >= b.limit
}

// The refusals of a Meter's Reserve, the same from every Meter.

// BudgetSpent refuses a request once what the session used has reached
// its budget of limit tokens.
func BudgetSpent(limit int64) *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, Why: fmt.Sprintf("the session's token budget (%d) is spent", limit)}
}

// MoneySpent refuses a request once the session's repository or
// installation has spent a day's money budget (decision 0077): the
// session is over.
func MoneySpent() *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, Why: "the day's money budget of this session's repository or installation is spent"}
}

// BudgetHeld refuses a request while the rest of the session's budget is
// reserved by requests in flight: it is not spent yet, since one of them
// may settle for less, so the agent may retry.
func BudgetHeld(limit int64) *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, RetryAfter: 1,
		Why: fmt.Sprintf("the rest of the session's token budget (%d) is reserved by its requests in flight; retry when one ends", limit)}
}

// TooManyInFlight refuses a request past the cap of n requests in flight.
func TooManyInFlight(n int) *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, RetryAfter: 1,
		Why: fmt.Sprintf("the session already has %d model requests in flight, its most at once; retry when one ends", n)}
}
