package modelproxy

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// Budget is a Meter in memory, for a session that lives in one process
// (`inspect run`): it adds up what the providers report and, past its
// limit, refuses every further request. The app's meter (app/channel)
// keeps its counts in the store instead, across attempts and replicas.
type Budget struct {
	limit int64

	mu   sync.Mutex
	used Usage
}

// NewBudget is a Budget of limit tokens (agents.token_budget; 0: none).
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// Admit refuses once the tokens used reach the limit.
func (b *Budget) Admit(context.Context) *Refusal {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && b.used.TotalTokens >= b.limit {
		return &Refusal{Status: http.StatusTooManyRequests, Why: fmt.Sprintf("the session's token budget (%d) is spent", b.limit)}
	}
	return nil
}

// Record adds one answer's usage.
func (b *Budget) Record(_ context.Context, u Usage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used.InputTokens += u.InputTokens
	b.used.OutputTokens += u.OutputTokens
	b.used.TotalTokens += u.TotalTokens
	b.used.Requests += u.Requests
}

// Used is what the session's requests used so far.
func (b *Budget) Used() Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Spent reports whether the limit is reached.
func (b *Budget) Spent() bool { return b.Admit(context.Background()) != nil }
