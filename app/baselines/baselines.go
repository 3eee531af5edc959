// Package baselines runs verify on the base (decision 0080): the pinned
// commit without the change, in an attempt of its own (kind baseline)
// from the same restore, cached by the snapshot digest, the base SHA and
// the verify commands, so that a retry, a later turn and a repair with the
// same key compare with the one run. It links a dispatched session attempt
// to its baseline (making one when none is live), starts baseline attempts
// on the executor (after the session's own: one that finds the executor at
// capacity waits), fails the ones lost, and compares a base's tests with
// a change's for the report (Compare). The comparison is the app's: the
// supervisor only runs verify.
//
// It must not import package app; the engine hands it what it needs.
package baselines

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner"
)

// Store is what baselines reads and writes of the store (*store.Store).
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	GetAttempt(ctx context.Context, id string) (store.Attempt, error)
	GetBaseline(ctx context.Context, digest string) (store.Baseline, error)
	LinkBaseline(ctx context.Context, forAttempt string, b store.Baseline, a store.Attempt, claimCode string, now time.Time) (store.Baseline, bool, error)
	FailBaseline(ctx context.Context, digest, attemptID, why string, now time.Time) (bool, error)
	LostBaselines(ctx context.Context, now time.Time) ([]store.Baseline, error)
	SetAttemptClaim(ctx context.Context, id, claimCode string, now time.Time) (bool, error)
	SetAttemptExternalID(ctx context.Context, id, externalID string, now time.Time) error
	SetAttemptHost(ctx context.Context, id, host string, now time.Time) error
	PendingBaselineHosts(ctx context.Context) (map[string][]store.Baseline, error)
}

// Dispatcher links session attempts to their baselines and starts
// baseline attempts.
type Dispatcher struct {
	Store Store
	// Executor runs baseline attempts as it runs sessions; nil runs none.
	Executor   runner.Executor
	ChannelURL string
	// Enabled is sessions.baseline: off, no session attempt is linked.
	Enabled bool
	Now     func() time.Time
	NewID   func() string
	Wake    func()
	// Postpone is the engine's: work that waits its turn, uncounted.
	Postpone     func(after time.Duration, why string) error
	PollInterval time.Duration
	// StopAttempt ends an attempt (its token, its read tokens, its run).
	StopAttempt func(ctx context.Context, attemptID string)
	// Host is this replica's name when its executor runs attempts on its
	// own host: a baseline it starts dies with it (FailOnDeadReplicas).
	Host string
}

// CacheDigest is a baseline's key: "sha256:" and the hex of the SHA-256 of
// the snapshot digest ("" cold), the base SHA and the verify commands as
// JSON, each followed by a NUL.
func CacheDigest(snapshotDigest, baseSHA string, verify []contract.Command) string {
	cmds, err := json.Marshal(verify)
	if err != nil {
		// Commands are strings, durations and names: they always encode.
		// Were one not to, its Go form still keys it, never a panic.
		cmds = fmt.Appendf(nil, "%#v", verify)
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(snapshotDigest), []byte(baseSHA), cmds} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// runID is the session id a baseline attempt's run is named by: the
// executor's (and the supervisor's) name of it. It names the attempt, not
// only the repo, as a snapshot build's does, so an executor that finds a
// run by (session id, number) never takes an earlier baseline's.
func runID(repoID int64, attemptID string) string {
	return "baseline-" + strconv.FormatInt(repoID, 10) + "-" + attemptID
}

// maxContinuationHops bounds the walk to a conversation's first session.
const maxContinuationHops = 100

// baseOf is the commit the base's verify runs on for sess: its pinned
// commit, or, for a continuation (decision 0072), the pinned commit of the
// conversation's first session, so a later turn compares with what the
// conversation started from and reuses its baseline. A snapshot restore
// copes with a base older than the snapshot (it fetches that commit
// alone), so the first session's commit is always usable.
func (d *Dispatcher) baseOf(ctx context.Context, sess store.Session, pinned string) string {
	// As stored: the link to the continued session is made while the
	// spec is built, after the dispatch read the session.
	if now, err := d.Store.GetSession(ctx, sess.ID); err == nil {
		sess = now
	}
	first := sess
	for range maxContinuationHops {
		prevID := first.Info().Continues
		if prevID == "" {
			break
		}
		prev, err := d.Store.GetSession(ctx, prevID)
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Str("continues", prevID).Msg("reading the conversation's first session; the base is this session's commit")
			return pinned
		}
		first = prev
	}
	if first.ID == sess.ID || first.AttemptID == "" {
		return pinned
	}
	a, err := d.Store.GetAttempt(ctx, first.AttemptID)
	if err != nil {
		return pinned
	}
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil || spec.PinnedSHA == "" {
		return pinned
	}
	return spec.PinnedSHA
}

// Link makes session attempt a (just dispatched) compare with its
// baseline: the live one of its key, reused, or a new baseline attempt,
// queued to start (dispatch_baseline). Best effort: a session runs and
// reports without it, its comparison then unavailable.
func (d *Dispatcher) Link(ctx context.Context, sess store.Session, a store.Attempt) {
	if !d.Enabled || d.Executor == nil || a.BaselineDigest != "" {
		return
	}
	log := zerolog.Ctx(ctx).With().Str("attempt_id", a.ID).Logger()
	var spec contract.Spec
	if err := json.Unmarshal([]byte(a.Spec), &spec); err != nil {
		log.Warn().Err(err).Msg("the attempt's spec is unreadable; no baseline")
		return
	}
	if len(spec.Verify) == 0 {
		return // nothing to compare
	}
	snapshot := ""
	if spec.Snapshot != nil {
		snapshot = spec.Snapshot.Digest
	}
	base := d.baseOf(ctx, sess, spec.PinnedSHA)
	digest := CacheDigest(snapshot, base, spec.Verify)
	id := d.NewID()
	bspec := baselineSpec(spec, base, runID(sess.RepoID, id), id)
	if err := bspec.Validate(); err != nil {
		log.Warn().Err(err).Msg("the baseline's spec does not validate; no baseline")
		return
	}
	body, err := json.Marshal(bspec)
	if err != nil {
		log.Warn().Err(err).Msg("encoding the baseline's spec; no baseline")
		return
	}
	// The claim code is made when the attempt starts (DispatchWork): until
	// then nobody holds one.
	b, created, err := d.Store.LinkBaseline(ctx, a.ID,
		store.Baseline{CacheDigest: digest, InstallationID: sess.InstallationID, RepoID: sess.RepoID, BaseSHA: base},
		store.Attempt{ID: id, RepoID: sess.RepoID, Deadline: bspec.Limits.Deadline, Spec: string(body)}, contract.NewSecret(), d.Now())
	if err != nil {
		log.Warn().Err(err).Msg("linking the baseline failed; no comparison")
		return
	}
	log.Info().Str("baseline", digest).Str("baseline_attempt", b.AttemptID).Bool("reused", !created).Str("base_sha", base).Msg("baseline linked")
	if created {
		d.Wake()
	}
}

// baselineSpec is the session's spec made a baseline's: the same repo,
// setup, verify, registries, services, snapshot and limits, on base, with
// nothing of the agent's conversation (no context, turns or state) and,
// of the artifacts, only the caps the verify steps' screenshots are
// collected under (decision 0083): the base's images are shown beside the
// change's, its other files are nobody's concern.
func baselineSpec(spec contract.Spec, base, sessionID, attemptID string) contract.Spec {
	b := spec
	b.SessionID, b.AttemptID, b.PinnedSHA = sessionID, attemptID, base
	b.Baseline, b.Reproduce = true, false
	b.Instructions = "Run verify on the base commit."
	b.Context, b.Steer, b.AgentState = nil, nil, nil
	if b.Artifacts != nil && contract.HasScreenshots(b.Verify) {
		caps := *b.Artifacts
		caps.Patterns = nil
		b.Artifacts = &caps
	} else {
		b.Artifacts = nil
	}
	return b
}

// DispatchWork is the dispatch_baseline work: it starts a baseline attempt
// (its id the payload) on the executor. At capacity it waits, postponed:
// the sessions' own attempts go first. One whose deadline passed, or that
// cannot start, fails its baseline.
func (d *Dispatcher) DispatchWork(ctx context.Context, w *store.Work) error {
	if d.Executor == nil {
		return nil
	}
	a, err := d.Store.GetAttempt(ctx, w.Payload)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Kind != string(contract.KindBaseline) || a.State != store.AttemptStarted || a.ExternalID != "" {
		return nil // started, claimed or ended already
	}
	log := zerolog.Ctx(ctx).With().Str("attempt_id", a.ID).Str("baseline", a.BaselineDigest).Logger()
	ctx = log.WithContext(ctx)
	b, err := d.Store.GetBaseline(ctx, a.BaselineDigest)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err != nil || b.AttemptID != a.ID || !b.Pending() {
		d.StopAttempt(ctx, a.ID) // its baseline went on without it
		return nil
	}
	now := d.Now()
	if !now.Before(a.Deadline) {
		return d.fail(ctx, a, "the executor had no room for the base's verify before its deadline")
	}
	id := runID(a.RepoID, a.ID)
	if finder, ok := d.Executor.(runner.AttemptFinder); ok {
		// An earlier try may have started it without recording that.
		ext, found, err := finder.Find(ctx, id, 1)
		if err != nil {
			return err
		}
		if found {
			return d.Store.SetAttemptExternalID(ctx, a.ID, ext, now)
		}
	}
	claim := contract.NewSecret()
	if ok, err := d.Store.SetAttemptClaim(ctx, a.ID, claim, now); err != nil || !ok {
		return err
	}
	if d.Host != "" {
		// Before it runs: a replica that dies starting it leaves it to
		// the others to fail (FailOnDeadReplicas).
		if err := d.Store.SetAttemptHost(ctx, a.ID, d.Host, now); err != nil {
			return err
		}
	}
	ext, err := d.Executor.Start(ctx, runner.Attempt{SessionID: id, AttemptID: a.ID, Number: 1,
		ChannelURL: d.ChannelURL, ClaimCode: claim, Deadline: a.Deadline})
	if errors.Is(err, runner.ErrAtCapacity) {
		wait := d.PollInterval * 5
		if left := a.Deadline.Sub(now); left < wait {
			wait = max(left, time.Second)
		}
		return d.Postpone(wait, "the executor is at capacity: the base's verify waits")
	}
	if err != nil {
		// The executor's error stays in the log: the reason is shown in the
		// pull request and on the check run, where an executor's internals
		// (its API's answer, a host name) have no place.
		log.Warn().Str("error", err.Error()).Msg("the executor did not start the base's verify")
		return d.fail(ctx, a, "the base's verify could not start: the executor did not take it (the app's log says why)")
	}
	log.Info().Str("external_id", ext).Msg("baseline dispatched")
	return d.Store.SetAttemptExternalID(ctx, a.ID, ext, d.Now())
}

// fail fails a's baseline saying why, and ends a.
func (d *Dispatcher) fail(ctx context.Context, a store.Attempt, why string) error {
	why = contract.CleanProgressMessage(why)
	if _, err := d.Store.FailBaseline(ctx, a.BaselineDigest, a.ID, why, d.Now()); err != nil {
		return err
	}
	zerolog.Ctx(ctx).Warn().Str("attempt_id", a.ID).Str("why", why).Msg("baseline failed")
	d.StopAttempt(ctx, a.ID)
	d.Wake()
	return nil
}

// FailLost fails the baselines whose attempt's deadline passed more than
// grace ago without a result, and ends their attempts: reconcile's, as it
// ends sessions past their deadline.
func (d *Dispatcher) FailLost(ctx context.Context, grace time.Duration) error {
	lost, err := d.Store.LostBaselines(ctx, d.Now().Add(-grace))
	if err != nil {
		return err
	}
	for _, b := range lost {
		a := store.Attempt{ID: b.AttemptID, BaselineDigest: b.CacheDigest}
		if err := d.fail(ctx, a, "the base's verify did not report by its deadline"); err != nil {
			return err
		}
	}
	return nil
}

// FailOnDeadReplicas fails the waiting or running baselines whose attempt
// a replica's local executor ran and that replica is dead (alive says):
// its sandbox died with it, and no report should wait for it. Reconcile's,
// before it re-dispatches that replica's sessions, so a retry links a new
// base's verify rather than the dead one.
func (d *Dispatcher) FailOnDeadReplicas(ctx context.Context, alive func(ctx context.Context, host string) (bool, error)) error {
	hosts, err := d.Store.PendingBaselineHosts(ctx)
	if err != nil {
		return err
	}
	for host, bs := range hosts {
		if host == d.Host {
			continue // this replica: alive, and its own reconcile sees its runs
		}
		ok, err := alive(ctx, host)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		for _, b := range bs {
			a := store.Attempt{ID: b.AttemptID, BaselineDigest: b.CacheDigest}
			if err := d.fail(ctx, a, "the replica running the base's verify died"); err != nil {
				return err
			}
		}
	}
	return nil
}
