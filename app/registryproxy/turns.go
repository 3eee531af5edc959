package registryproxy

import (
	"container/list"
	"context"
	"sync"
)

// turns caps the registry requests in flight, per attempt and in the
// whole process (egress.max_registry_requests_per_attempt,
// egress.max_registry_requests; decision 0059), so that what the app holds
// for them (a connection upstream, buffers, a goroutine) does not grow with
// what a sandbox asks for. Over a cap a request waits its turn, first come
// first served, for as long as its context lasts: a package manager's
// parallel downloads are slowed, never refused.
type turns struct {
	perAttempt, perProcess int

	mu       sync.Mutex
	process  turnQueue
	attempts map[string]*turnQueue // an entry goes when no request holds or waits for it

	// queued, when set (tests only), is told each time a request starts
	// waiting for a turn, once it is in its queue: a test then knows the
	// order requests came in without polling the counts.
	queued chan<- struct{}
}

// turnQueue is one cap's requests: those holding a turn, and those
// waiting, in the order they came. A turn that ends is handed to the first
// waiter, so a later request never overtakes an earlier one.
type turnQueue struct {
	held    int
	waiting list.List // of chan struct{}, closed when handed a turn
}

func newTurns(perAttempt, perProcess int) *turns {
	return &turns{perAttempt: perAttempt, perProcess: perProcess, attempts: map[string]*turnQueue{}}
}

// wait returns once attempt's request holds a turn of both caps, or with
// ctx's error when it ends first (holding none). Every nil return is
// matched by one done.
func (t *turns) wait(ctx context.Context, attempt string) error {
	t.mu.Lock()
	q := t.attempts[attempt]
	if q == nil {
		q = &turnQueue{}
		t.attempts[attempt] = q
	}
	// The attempt's turn first: an attempt over its own cap then holds
	// no place of the process's that another attempt could use. Once
	// queued or counted here, q stays in the map until done.
	ready, el := t.queueLocked(q, t.perAttempt)
	t.mu.Unlock()
	if err := t.await(ctx, q, ready, el); err != nil {
		t.mu.Lock()
		t.forgetIdleLocked(attempt, q)
		t.mu.Unlock()
		return err
	}
	t.mu.Lock()
	ready, el = t.queueLocked(&t.process, t.perProcess)
	t.mu.Unlock()
	if err := t.await(ctx, &t.process, ready, el); err != nil {
		t.mu.Lock()
		t.giveLocked(q)
		t.forgetIdleLocked(attempt, q)
		t.mu.Unlock()
		return err
	}
	return nil
}

// done ends attempt's request's turns.
func (t *turns) done(attempt string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.giveLocked(&t.process)
	if q := t.attempts[attempt]; q != nil {
		t.giveLocked(q)
		t.forgetIdleLocked(attempt, q)
	}
}

// queueLocked takes a turn of q, which max caps, when one is free and no
// one waits (ready is nil); otherwise it queues the request, whose ready
// is closed when it is handed one.
func (t *turns) queueLocked(q *turnQueue, max int) (ready chan struct{}, el *list.Element) {
	if q.held < max && q.waiting.Len() == 0 {
		q.held++
		return nil, nil
	}
	ready = make(chan struct{})
	return ready, q.waiting.PushBack(ready)
}

// await waits for a queued request's turn of q (none when ready is nil).
func (t *turns) await(ctx context.Context, q *turnQueue, ready chan struct{}, el *list.Element) error {
	if ready == nil {
		return nil
	}
	if t.queued != nil {
		t.queued <- struct{}{}
	}
	select {
	case <-ready:
		return nil // handed over by giveLocked, already counted in held
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-ready:
		// Handed a turn as the context ended: it goes to the next in line.
		t.giveLocked(q)
	default:
		q.waiting.Remove(el)
	}
	return ctx.Err()
}

// giveLocked ends one of q's turns: it is handed to the first waiter, or
// freed when none waits.
func (t *turns) giveLocked(q *turnQueue) {
	if first := q.waiting.Front(); first != nil {
		q.waiting.Remove(first)
		close(first.Value.(chan struct{}))
		return
	}
	q.held--
}

func (t *turns) forgetIdleLocked(attempt string, q *turnQueue) {
	if q.held == 0 && q.waiting.Len() == 0 && t.attempts[attempt] == q {
		delete(t.attempts, attempt)
	}
}

// inFlight are the requests holding a turn of attempt's cap and of the
// process's, and those waiting for one.
func (t *turns) inFlight(attempt string) (attemptHeld, attemptWaiting, processHeld, processWaiting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if q := t.attempts[attempt]; q != nil {
		attemptHeld, attemptWaiting = q.held, q.waiting.Len()
	}
	return attemptHeld, attemptWaiting, t.process.held, t.process.waiting.Len()
}
