package outbound

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// fairQueue lines up one installation's writes waiting for a slot. One
// waiter at a time holds the turn and asks Slots (so waiting writes do not
// all poll the store); the turn passes round-robin between repositories,
// first come first served within one, so a repository with many writes
// queued delays another's by at most one slot per turn.
type fairQueue struct {
	busy   bool // a waiter holds the turn; when false, nobody is queued
	queues map[string][]*waiter
	ring   []string // repositories with waiters, in turn order
	next   int      // index in ring of the repository served next
}

type waiter struct {
	ready   chan struct{} // closed when the turn is handed over
	granted bool
}

func (q *fairQueue) push(repo string, w *waiter) {
	if q.queues == nil {
		q.queues = map[string][]*waiter{}
	}
	if _, ok := q.queues[repo]; !ok {
		q.ring = append(q.ring, repo)
	}
	q.queues[repo] = append(q.queues[repo], w)
}

// pop takes the head of the next repository's queue.
func (q *fairQueue) pop() *waiter {
	if len(q.ring) == 0 {
		return nil
	}
	if q.next >= len(q.ring) {
		q.next = 0
	}
	repo := q.ring[q.next]
	ws := q.queues[repo]
	w := ws[0]
	if len(ws) == 1 {
		delete(q.queues, repo)
		q.ring = slices.Delete(q.ring, q.next, q.next+1) // next now names the following one
	} else {
		q.queues[repo] = ws[1:]
		q.next++
	}
	return w
}

// remove takes out a waiter that gave up before its turn.
func (q *fairQueue) remove(repo string, w *waiter) {
	ws := q.queues[repo]
	i := slices.Index(ws, w)
	if i < 0 {
		return
	}
	ws = slices.Delete(ws, i, i+1)
	if len(ws) > 0 {
		q.queues[repo] = ws
		return
	}
	delete(q.queues, repo)
	if j := slices.Index(q.ring, repo); j >= 0 {
		q.ring = slices.Delete(q.ring, j, j+1)
		if j < q.next {
			q.next--
		}
	}
}

// awaitTurn waits until this write may ask Slots.
func (l *Limiter) awaitTurn(ctx context.Context, st *installation, repo string) error {
	l.mu.Lock()
	q := &st.fair
	if !q.busy {
		q.busy = true
		l.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	q.push(repo, w)
	hook := l.testHookQueued
	l.mu.Unlock()
	if hook != nil {
		hook()
	}
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		granted := w.granted
		if !granted {
			q.remove(repo, w)
		}
		l.mu.Unlock()
		if granted {
			// Handed the turn as it gave up: pass it on, or the queue stalls.
			l.passTurn(st)
		}
		return ctx.Err()
	}
}

// passTurn hands the turn to the next waiter, or frees it.
func (l *Limiter) passTurn(st *installation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := st.fair.pop()
	if w == nil {
		st.fair.busy = false
		return
	}
	w.granted = true
	close(w.ready)
}

// takeSlot waits for the turn, then for a slot, within deadline; past it
// the write fails with a secondary-limit error carrying the wait.
func (l *Limiter) takeSlot(ctx context.Context, t *transport, st *installation, req *http.Request, deadline time.Time) error {
	if err := l.awaitTurn(ctx, st, repoOf(req.URL.Path)); err != nil {
		return err
	}
	defer l.passTurn(st)
	for {
		now := l.cfg.Clock()
		wait, err := l.slots.Take(ctx, t.key, l.cfg.Clock)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("outbound: taking a write slot for %s: %w", t.key, err)
		}
		if wait <= 0 {
			return nil
		}
		if now.Add(wait).After(deadline) {
			return abuseError(req, wait, fmt.Sprintf("content-creating requests for %s are at the limit; not sent (Inspect's outbound limiter)", t.key))
		}
		l.cfg.Logger.Debug().Str("rate_key", t.key).Dur("wait", wait).Msg("waiting for a write slot")
		if err := l.wait(ctx, wait); err != nil {
			return err
		}
	}
}
