package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/internal/fakeclock"
)

var start = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeStore is the store as the fleet uses it: in memory, each call
// recorded, each failure scripted.
type fakeStore struct {
	mu sync.Mutex
	// heartbeatErr, tickErr fail Heartbeat and ClaimTick while set.
	heartbeatErr, tickErr error
	beats                 []time.Time
	prunedBefore          time.Time
	left                  []string
	// due is ClaimTick's answer per job name.
	due   map[string]bool
	ticks []tick
	// known GUIDs were accepted; asked counts redeliveries per GUID.
	known            map[string]bool
	asked            map[string]int
	redeliveryPruned time.Time
	// others are the other replicas alive.
	others int
}

type tick struct {
	name, owner string
	every       time.Duration
}

func newFakeStore() *fakeStore {
	return &fakeStore{due: map[string]bool{}, known: map[string]bool{}, asked: map[string]int{}}
}

func (s *fakeStore) Heartbeat(_ context.Context, _ string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heartbeatErr != nil {
		return s.heartbeatErr
	}
	s.beats = append(s.beats, now)
	return nil
}

// LiveReplicas counts the distinct replicas that beat after since; live
// adds that many others.
func (s *fakeStore) LiveReplicas(_ context.Context, since time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.others
	for _, b := range s.beats {
		if b.After(since) {
			return n + 1, nil
		}
	}
	return n, nil
}

func (s *fakeStore) PruneReplicas(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prunedBefore = before
	return nil
}

func (s *fakeStore) Leave(_ context.Context, replica string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left = append(s.left, replica)
	return nil
}

func (s *fakeStore) ClaimTick(_ context.Context, name, owner string, _ time.Time, every time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ticks = append(s.ticks, tick{name, owner, every})
	if s.tickErr != nil {
		return false, s.tickErr
	}
	return s.due[name], nil
}

func (s *fakeStore) DeliveryKnown(_ context.Context, guid string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[guid], nil
}

func (s *fakeStore) Redeliveries(_ context.Context, guid string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[guid], nil
}

func (s *fakeStore) RecordRedelivery(_ context.Context, guid string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked[guid]++
	return nil
}

func (s *fakeStore) PruneRedeliveries(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redeliveryPruned = before
	return nil
}

// countingEngine counts the reconciles asked of it.
type countingEngine struct {
	reconciles int
	err        error
}

func (e *countingEngine) Reconcile(context.Context) error {
	e.reconciles++
	return e.err
}

func newTestFleet(st *fakeStore, clock *fakeclock.Clock, logs *bytes.Buffer, o Options) *Fleet {
	o.Name, o.Store, o.Clock, o.Logger = "replica-a", st, clock, zerolog.New(logs)
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = time.Minute
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Hour // never ticks within a test
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = time.Hour
	}
	if o.ClassifyError == nil {
		o.ClassifyError = func(error, time.Time) (time.Duration, bool) { return 0, false }
	}
	return New(o)
}

// A replica judges others dead only after its own beats have held for a
// whole replica timeout; a failed beat starts that wait over.
func TestMayJudgeReplicasOnlyAfterATimeoutOfOwnBeats(t *testing.T) {
	st, clock := newFakeStore(), fakeclock.New(start)
	f := newTestFleet(st, clock, &bytes.Buffer{}, Options{})
	ctx := context.Background()
	if f.MayJudgeReplicas(clock.Now()) {
		t.Fatal("judged before any beat")
	}
	f.Beat(ctx)
	if !st.prunedBefore.Equal(start.Add(-10 * time.Minute)) {
		t.Errorf("pruned before %v, want ten replica timeouts ago", st.prunedBefore)
	}
	clock.Advance(59 * time.Second)
	f.Beat(ctx)
	if f.MayJudgeReplicas(clock.Now()) {
		t.Fatal("judged before a whole timeout of beats")
	}
	clock.Advance(time.Second)
	if !f.MayJudgeReplicas(clock.Now()) {
		t.Fatal("a timeout of beats, and still not judging")
	}
	st.heartbeatErr = errors.New("database away")
	f.Beat(ctx)
	if f.MayJudgeReplicas(clock.Now()) {
		t.Fatal("judged right after its own beat failed")
	}
	st.heartbeatErr = nil
	f.Beat(ctx)
	clock.Advance(time.Minute)
	if !f.MayJudgeReplicas(clock.Now()) {
		t.Error("a timeout of beats after the failure, and still not judging")
	}
	if err := f.Leave(ctx); err != nil || len(st.left) != 1 || st.left[0] != "replica-a" {
		t.Errorf("left = %v (%v), want this replica", st.left, err)
	}
}

func TestDueSaysNoWhenTheStoreFails(t *testing.T) {
	st, logs := newFakeStore(), &bytes.Buffer{}
	f := newTestFleet(st, fakeclock.New(start), logs, Options{})
	ctx := zerolog.New(logs).WithContext(context.Background())
	st.due["reconcile_targets"] = true
	if !f.Due(ctx, "reconcile_targets", time.Minute) || f.Due(ctx, "other", time.Minute) {
		t.Error("Due does not pass on the store's answer")
	}
	if want := (tick{"reconcile_targets", "replica-a", time.Minute}); st.ticks[0] != want {
		t.Errorf("claimed %+v, want %+v", st.ticks[0], want)
	}
	st.tickErr = errors.New("database away")
	if f.Due(ctx, "reconcile_targets", time.Minute) {
		t.Error("due although the tick could not be claimed")
	}
	if !strings.Contains(logs.String(), "could not claim the periodic job") {
		t.Errorf("the failure was not logged:\n%s", logs)
	}
}

// The periodic loop reconciles on every replica at once, sweeps only when
// the sweep is on and this replica won it, and returns once stop is closed.
func TestRunPeriodicReconcilesAndSweepsOnlyWhenDue(t *testing.T) {
	for _, c := range []struct {
		name     string
		interval time.Duration
		due      bool
		swept    bool
	}{
		{"sweep off", 0, true, false},
		{"another replica's turn", time.Hour, false, false},
		{"this replica's turn", time.Hour, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, logs := newFakeStore(), &bytes.Buffer{}
			st.due["redelivery_sweep"] = c.due
			swept := false
			f := newTestFleet(st, fakeclock.New(start), logs, Options{
				GitHub:     appClientFunc(func() { swept = true }),
				Redelivery: redelivery(c.interval),
			})
			engine := &countingEngine{err: errors.New("store away")}
			stop := make(chan struct{})
			close(stop)
			f.RunPeriodic(stop, context.Background(), engine.Reconcile)
			if engine.reconciles != 1 {
				t.Errorf("reconciles = %d, want 1", engine.reconciles)
			}
			if swept != c.swept {
				t.Errorf("swept = %v, want %v", swept, c.swept)
			}
			if !strings.Contains(logs.String(), "reconcile failed") {
				t.Errorf("the reconcile's failure was not logged:\n%s", logs)
			}
		})
	}
}

func TestRunHeartbeatsReturnsOnStop(t *testing.T) {
	st := newFakeStore()
	f := newTestFleet(st, fakeclock.New(start), &bytes.Buffer{}, Options{})
	stop := make(chan struct{})
	close(stop)
	f.RunHeartbeats(stop, context.Background())
	if len(st.beats) != 0 {
		t.Errorf("beats = %v, want none before the first tick", st.beats)
	}
}

func TestReplicaNamesDiffer(t *testing.T) {
	a, b := ReplicaName(), ReplicaName()
	if a == b || strings.Contains(a, "/") {
		t.Errorf("names %q and %q: want distinct, without slashes", a, b)
	}
}

// After each beat the fleet's size is heard, this replica among it: a
// replica takes its share of what GitHub counts across all of them. A beat
// that failed says nothing, and the share stays.
func TestBeatTellsTheFleetSize(t *testing.T) {
	st, clock := newFakeStore(), fakeclock.New(start)
	var heard []int
	f := newTestFleet(st, clock, &bytes.Buffer{}, Options{OnFleetSize: func(live int) { heard = append(heard, live) }})
	ctx := context.Background()
	f.Beat(ctx)
	st.others = 2
	f.Beat(ctx)
	st.heartbeatErr = errors.New("database away")
	f.Beat(ctx)
	if fmt.Sprint(heard) != "[1 3]" {
		t.Errorf("heard fleet sizes %v, want [1 3]", heard)
	}
}
