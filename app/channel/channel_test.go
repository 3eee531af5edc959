package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/policy"
	"github.com/inspecthq/inspect/session"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type fixedClock struct{ now time.Time }

func (c *fixedClock) Now() time.Time { return c.now }

// fakeStore holds attempts by id; an attempt's session token is its id
// with "-token" appended, and a claim code is accepted once.
type fakeStore struct {
	attempts  map[string]store.Attempt
	claims    map[string]string // attempt id -> unspent claim code
	sessions  map[string]store.Session
	snapRepos map[int64]store.SnapshotRepo
	usage     map[string]store.Usage
	artifacts []store.Artifact
	// agentStates are the kept agent states, by attempt id.
	agentStates map[string][]byte
	// output is the live output chunks kept, and the tail asked for.
	output     []store.OutputChunk
	outputKeep int64
	// reserved holds each reservation's attempt and tokens, by id.
	reserved map[string]fakeReservation
	// minted is the session token each claim minted, by attempt id; it
	// works beside tokenOf's.
	minted map[string]string
	// baselines are the baselines by their attempt's id, and
	// baselineResults what RecordBaselineResult was given.
	baselines       map[string]store.Baseline
	baselineResults []fakeBaselineResult
}

type fakeBaselineResult struct {
	attempt, why, evidence string
	state                  store.BaselineState
}

func (f *fakeStore) BaselineOfAttempt(_ context.Context, id string) (store.Baseline, error) {
	b, ok := f.baselines[id]
	if !ok {
		return store.Baseline{}, store.ErrNotFound
	}
	return b, nil
}

func (f *fakeStore) RecordBaselineResult(_ context.Context, id, _ string, state store.BaselineState, why, evidence string, _ time.Time) (bool, error) {
	for _, r := range f.baselineResults {
		if r.attempt == id {
			return false, nil
		}
	}
	f.baselineResults = append(f.baselineResults, fakeBaselineResult{attempt: id, why: why, evidence: evidence, state: state})
	return true, nil
}

type fakeReservation struct {
	attempt string
	tokens  int64
}

func tokenOf(id string) string { return id + "-token" }

// claim is the store's side of the engine's ClaimAttempt.
func (f *fakeStore) claim(id, code string) (store.Attempt, error) {
	if want, ok := f.claims[id]; !ok || want != code {
		return store.Attempt{}, store.ErrClaimRefused
	}
	delete(f.claims, id)
	return f.attempts[id], nil
}

func (f *fakeStore) AuthenticateAttempt(_ context.Context, id, token string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok || (token != tokenOf(id) && (f.minted[id] == "" || token != f.minted[id])) {
		return store.Attempt{}, errors.New("no such attempt")
	}
	return a, nil
}

func (f *fakeStore) GetSession(_ context.Context, id string) (store.Session, error) {
	s, ok := f.sessions[id]
	if !ok {
		return store.Session{}, errors.New("no such session")
	}
	return s, nil
}

// The fake keeps no turns: the app's are the store's (app/store tests)
// and the steering end to end's.
func (f *fakeStore) DeliverTurns(context.Context, string, string, int, time.Time) error { return nil }

func (f *fakeStore) TurnsAfter(context.Context, string, int) ([]session.Turn, error) { return nil, nil }

func (f *fakeStore) SetRecorder(context.Context, string, string) error { return nil }

func (f *fakeStore) GetSnapshotRepo(_ context.Context, repoID int64) (store.SnapshotRepo, error) {
	r, ok := f.snapRepos[repoID]
	if !ok {
		return store.SnapshotRepo{}, errors.New("no such repo")
	}
	return r, nil
}

func (f *fakeStore) SessionUsage(_ context.Context, id string) (store.Usage, error) {
	return f.usage[id], nil
}

// PutArtifact keeps what the handler stores; the cap is the store's to
// enforce (app/store's own tests), so every artifact fits here.
func (f *fakeStore) PutArtifact(_ context.Context, a store.Artifact, _ int64) error {
	f.artifacts = append(f.artifacts, a)
	return nil
}

func (f *fakeStore) PutAgentState(_ context.Context, attemptID, _ string, data []byte, _ time.Time) error {
	if f.agentStates == nil {
		f.agentStates = map[string][]byte{}
	}
	f.agentStates[attemptID] = data
	return nil
}

func (f *fakeStore) AgentState(_ context.Context, attemptID string) ([]byte, error) {
	data, ok := f.agentStates[attemptID]
	if !ok {
		return nil, store.ErrNotFound
	}
	return data, nil
}

func (f *fakeStore) AppendOutput(_ context.Context, c store.OutputChunk, keep int64) (bool, error) {
	f.output = append(f.output, c)
	f.outputKeep = keep
	return true, nil
}

func (f *fakeStore) ReserveModelTokens(_ context.Context, attemptID, id string, tokens int64, lim store.ReserveLimits, _ time.Time) (store.Reserved, error) {
	out := store.Reserved{Used: f.usage[attemptID]}
	for _, r := range f.reserved {
		if r.attempt == attemptID {
			out.Reserved += r.tokens
			out.InFlight++
		}
	}
	switch {
	case lim.Budget > 0 && out.Used.TotalTokens >= lim.Budget:
		out.Refused = store.ReserveBudgetSpent
	case lim.Budget > 0 && out.Used.TotalTokens+out.Reserved >= lim.Budget:
		out.Refused = store.ReserveBudgetHeld
	case lim.MaxInFlight > 0 && out.InFlight >= lim.MaxInFlight:
		out.Refused = store.ReserveTooMany
	default:
		if f.reserved == nil {
			f.reserved = map[string]fakeReservation{}
		}
		f.reserved[id] = fakeReservation{attemptID, tokens}
	}
	return out, nil
}

func (f *fakeStore) SettleModelTokens(_ context.Context, id string, u store.Usage, _ time.Time) (store.Usage, error) {
	r, ok := f.reserved[id]
	if !ok {
		return store.Usage{}, store.ErrNotFound
	}
	delete(f.reserved, id)
	t := f.usage[r.attempt]
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.TotalTokens += u.TotalTokens
	t.CacheReadTokens += u.CacheReadTokens
	t.CacheWriteTokens += u.CacheWriteTokens
	t.Requests += u.Requests
	f.usage[r.attempt] = t
	return t, nil
}

// fakeEngine records what the channel asked of the engine's parts it is
// handed (its claim, results, read tokens, budget and workers), and of
// the store's progress and snapshot results (recordingStore).
type fakeEngine struct {
	st            *fakeStore // claims are the store's
	wakes         int
	progress      []string
	results       []string
	snapResults   []string
	snapOutcomes  []store.SnapshotOutcome
	snapFirst     bool
	minted        []int64 // installation ids
	revoked       []string
	endedOverBudg []int64 // the usage each EndForBudget was given
	// endedOverMoney are the refusals each EndForMoneyBudget was given.
	endedOverMoney []policy.Decision
}

func (e *fakeEngine) wake() { e.wakes++ }
func (e *fakeEngine) ClaimAttempt(_ context.Context, id, code, token string) (store.Attempt, error) {
	a, err := e.st.claim(id, code)
	if err == nil {
		if e.st.minted == nil {
			e.st.minted = map[string]string{}
		}
		e.st.minted[id] = token
	}
	return a, err
}
func (e *fakeEngine) RecordProgress(_ context.Context, id string, _ int64, msg string, _ time.Time) (bool, error) {
	e.progress = append(e.progress, id+": "+msg)
	return true, nil
}
func (e *fakeEngine) RecordResult(_ context.Context, id string, _ contract.ResultUpload) error {
	e.results = append(e.results, id)
	return nil
}
func (e *fakeEngine) RecordSnapshotResult(_ context.Context, id, _ string, o store.SnapshotOutcome, _ time.Time) (bool, error) {
	e.snapResults = append(e.snapResults, id)
	e.snapOutcomes = append(e.snapOutcomes, o)
	return e.snapFirst, nil
}
func (e *fakeEngine) MintFor(_ context.Context, _ string, installationID, _ int64) (string, time.Time, error) {
	e.minted = append(e.minted, installationID)
	return "ghs_read", epoch.Add(time.Hour), nil
}
func (e *fakeEngine) RevokeAttempt(_ context.Context, id string) {
	e.revoked = append(e.revoked, id)
}
func (e *fakeEngine) EndForBudget(_ context.Context, _ store.Attempt, used store.Usage, _ int64) {
	e.endedOverBudg = append(e.endedOverBudg, used.TotalTokens)
}

func (e *fakeEngine) EndForMoneyBudget(_ context.Context, _ store.Attempt, d policy.Decision) {
	e.endedOverMoney = append(e.endedOverMoney, d)
}

// recordingStore is the fake store, whose progress and snapshot results
// the fakeEngine records.
type recordingStore struct {
	*fakeStore
	e *fakeEngine
}

func (r recordingStore) RecordProgress(ctx context.Context, id string, seq int64, msg string, now time.Time) (bool, error) {
	return r.e.RecordProgress(ctx, id, seq, msg, now)
}

func (r recordingStore) RecordSnapshotResult(ctx context.Context, id, result string, o store.SnapshotOutcome, now time.Time) (bool, error) {
	return r.e.RecordSnapshotResult(ctx, id, result, o, now)
}

// engineParts hands e's parts to o, as the engine hands its own.
func engineParts(o *Options, e *fakeEngine) {
	o.Claim, o.RecordResult, o.ReadTokens, o.Budget, o.Wake = e.ClaimAttempt, e.RecordResult, e, e, e.wake
}

type providers map[string]config.Provider

func (p providers) Provider(name string) (config.Provider, bool) { v, ok := p[name]; return v, ok }

type rig struct {
	st     *fakeStore
	engine *fakeEngine
	clock  *fixedClock
	mux    *http.ServeMux
}

const (
	jobSHA   = "0123456789abcdef0123456789abcdef01234567"
	otherSHA = "89abcdef0123456789abcdef0123456789abcdef"
	digest   = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

const (
	sessionAttempt  = "att-session"
	snapshotAttempt = "att-snapshot"
	baselineAttempt = "att-baseline"
	endedAttempt    = "att-ended"
)

func newRig(t testing.TB, o Options) *rig {
	t.Helper()
	spec := mustJSON(t, contract.Spec{Agent: contract.Agent{Model: "m-1", Provider: "p"}})
	r := &rig{
		st: &fakeStore{
			attempts: map[string]store.Attempt{
				sessionAttempt:  {ID: sessionAttempt, SessionID: "s1", Kind: string(contract.KindSession), State: store.AttemptRunning, Deadline: epoch.Add(time.Hour), Spec: spec},
				snapshotAttempt: {ID: snapshotAttempt, Kind: string(contract.KindSnapshot), RepoID: 7, State: store.AttemptRunning, Deadline: epoch.Add(time.Hour), Spec: `{"sha":"` + jobSHA + `","repo":{"default_branch":"trunk"}}`},
				endedAttempt:    {ID: endedAttempt, SessionID: "s1", Kind: string(contract.KindSession), State: store.AttemptEnded, Deadline: epoch.Add(time.Hour), Spec: spec},
				baselineAttempt: {ID: baselineAttempt, Kind: string(contract.KindBaseline), RepoID: 5, State: store.AttemptRunning, Deadline: epoch.Add(time.Hour), Spec: spec, BaselineDigest: digest},
			},
			baselines: map[string]store.Baseline{baselineAttempt: {CacheDigest: digest, InstallationID: 300, RepoID: 5, AttemptID: baselineAttempt, State: store.BaselineRunning}},
			claims:    map[string]string{sessionAttempt: "claim-code-0123456789"},
			sessions:  map[string]store.Session{"s1": {ID: "s1", InstallationID: 100, RepoID: 5}},
			snapRepos: map[int64]store.SnapshotRepo{7: {RepoID: 7, InstallationID: 200}},
			usage:     map[string]store.Usage{},
		},
		engine: &fakeEngine{},
		clock:  &fixedClock{now: epoch},
		mux:    http.NewServeMux(),
	}
	r.engine.st = r.st
	o.Store, o.Clock, o.Logger = recordingStore{fakeStore: r.st, e: r.engine}, r.clock, zerolog.Nop()
	engineParts(&o, r.engine)
	New(o).Routes(r.mux)
	return r
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// call sends a request as attempt id's supervisor and returns the status
// and the body.
func (r *rig) call(t *testing.T, method, pattern, id, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, contract.AttemptPath(pattern, id), strings.NewReader(body))
	req.Header.Set(contract.HeaderSessionToken, tokenOf(id))
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func errorCode(t *testing.T, body string) contract.ErrorCode {
	t.Helper()
	var e contract.ErrorResponse
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("not an error body: %q", body)
	}
	return e.Code
}

func TestChannelRoutesRefuseATokenOfTheOtherKind(t *testing.T) {
	r := newRig(t, Options{})
	for _, tc := range []struct {
		method, pattern, attempt string
		want                     int
	}{
		{http.MethodGet, contract.PathSpec, sessionAttempt, http.StatusOK},
		{http.MethodGet, contract.PathSnapshotJob, sessionAttempt, http.StatusConflict},
		{http.MethodPut, contract.PathSnapshotResult, sessionAttempt, http.StatusConflict},
		{http.MethodGet, contract.PathSnapshotJob, snapshotAttempt, http.StatusOK},
		{http.MethodGet, contract.PathSpec, snapshotAttempt, http.StatusConflict},
		{http.MethodPut, contract.PathResult, snapshotAttempt, http.StatusConflict},
		{http.MethodPost, contract.PathProgress, snapshotAttempt, http.StatusConflict},
		{http.MethodPost, contract.PathOutput, snapshotAttempt, http.StatusConflict},
		{http.MethodPost, contract.PathEgressModel, snapshotAttempt, http.StatusConflict},
	} {
		got, body := r.call(t, tc.method, tc.pattern, tc.attempt, "{}")
		if got != tc.want {
			t.Errorf("%s %s as %s = %d, want %d (%s)", tc.method, tc.pattern, tc.attempt, got, tc.want, body)
		}
	}
	if len(r.engine.results)+len(r.engine.snapResults)+len(r.engine.progress)+len(r.st.output) != 0 {
		t.Errorf("a refused request reached the engine: %+v", r.engine)
	}
}

func TestChannelRepoTokenServesBothKindsFromTheirOwnInstallation(t *testing.T) {
	r := newRig(t, Options{})
	for _, id := range []string{sessionAttempt, snapshotAttempt} {
		got, body := r.call(t, http.MethodPost, contract.PathRepoToken, id, "")
		var tok contract.RepoTokenResponse
		if got != http.StatusOK || json.Unmarshal([]byte(body), &tok) != nil || tok.Token != "ghs_read" {
			t.Errorf("repo token for %s = %d %s", id, got, body)
		}
	}
	if want := []int64{100, 200}; len(r.engine.minted) != 2 || r.engine.minted[0] != want[0] || r.engine.minted[1] != want[1] {
		t.Errorf("minted for installations %v, want %v", r.engine.minted, want)
	}
}

func TestChannelRefusesBadEndedAndExpiredTokens(t *testing.T) {
	r := newRig(t, Options{})
	req := httptest.NewRequest(http.MethodGet, contract.AttemptPath(contract.PathSpec, sessionAttempt), nil)
	req.Header.Set(contract.HeaderSessionToken, tokenOf(snapshotAttempt))
	rec := httptest.NewRecorder()
	r.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || errorCode(t, rec.Body.String()) != contract.ErrorUnauthorized {
		t.Errorf("another attempt's token = %d %s", rec.Code, rec.Body)
	}

	// An ended attempt may still upload its result, and nothing else.
	if got, body := r.call(t, http.MethodGet, contract.PathSpec, endedAttempt, ""); got != http.StatusGone || errorCode(t, body) != contract.ErrorAttemptEnded {
		t.Errorf("spec of an ended attempt = %d %s", got, body)
	}
	if got, body := r.call(t, http.MethodPost, contract.PathProgress, endedAttempt, `{"seq":1}`); got != http.StatusGone {
		t.Errorf("progress of an ended attempt = %d %s", got, body)
	}
	if got, body := r.call(t, http.MethodPut, contract.PathResult, endedAttempt, "not json"); got != http.StatusBadRequest {
		t.Errorf("result of an ended attempt = %d %s, want it past the token check (400 for its body)", got, body)
	}

	// The token outlives the deadline by the grace period, no more.
	r.clock.now = epoch.Add(time.Hour + sessionTokenTTLGrace)
	if got, body := r.call(t, http.MethodGet, contract.PathSpec, sessionAttempt, ""); got != http.StatusOK {
		t.Errorf("spec at the end of the grace = %d %s", got, body)
	}
	r.clock.now = r.clock.now.Add(time.Second)
	if got, body := r.call(t, http.MethodGet, contract.PathSpec, sessionAttempt, ""); got != http.StatusGone || errorCode(t, body) != contract.ErrorAttemptEnded {
		t.Errorf("spec past the grace = %d %s", got, body)
	}
	if got, _ := r.call(t, http.MethodPut, contract.PathResult, sessionAttempt, "not json"); got != http.StatusGone {
		t.Errorf("result past the grace = %d, want 410", got)
	}
}

func TestClaimIsSpentOnceAndAnswersWithTheTokensExpiry(t *testing.T) {
	r := newRig(t, Options{})
	claim := func(req contract.ClaimRequest) (int, string) {
		rec := httptest.NewRecorder()
		r.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, contract.AttemptPath(contract.PathClaim, sessionAttempt), strings.NewReader(mustJSON(t, req))))
		return rec.Code, rec.Body.String()
	}
	good := contract.ClaimRequest{AttemptID: sessionAttempt, ClaimCode: "claim-code-0123456789", SpecVersion: contract.SpecVersion}

	old := good
	old.SpecVersion = "0"
	if got, body := claim(old); got != http.StatusConflict || errorCode(t, body) != contract.ErrorVersionMismatch {
		t.Errorf("another spec version = %d %s", got, body)
	}
	other := good
	other.AttemptID = snapshotAttempt
	if got, _ := claim(other); got != http.StatusBadRequest {
		t.Errorf("another attempt's id = %d, want 400", got)
	}
	if r.engine.wakes != 0 {
		t.Fatalf("a refused claim woke the workers")
	}
	got, body := claim(good)
	var resp contract.ClaimResponse
	if got != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil {
		t.Fatalf("claim = %d %s", got, body)
	}
	if resp.SessionToken == "" || !resp.ExpiresAt.Equal(epoch.Add(time.Hour+sessionTokenTTLGrace)) || resp.Kind != contract.KindSession {
		t.Errorf("claim response = %+v", resp)
	}
	if r.engine.wakes != 1 {
		t.Errorf("wakes = %d, want 1", r.engine.wakes)
	}
	if got, body := claim(good); got != http.StatusUnauthorized || errorCode(t, body) != contract.ErrorClaimUsed {
		t.Errorf("second claim = %d %s", got, body)
	}
}

func TestSnapshotResultRevokesAndWakesOnlyTheFirstTime(t *testing.T) {
	r := newRig(t, Options{})
	if got, _ := r.call(t, http.MethodPut, contract.PathSnapshotResult, snapshotAttempt, `{"digest":"`+digest+`","sha":"`+otherSHA+`"}`); got != http.StatusBadRequest {
		t.Errorf("a result for another commit = %d, want 400", got)
	}
	r.engine.snapFirst = true
	result := `{"digest":"` + digest + `","sha":"` + jobSHA + `","size":52428800,"layers":4,"log":"--- deps: go mod download exited 0 after 1s\ntoken ghs_` + strings.Repeat("A", 36) + `\n"}`
	if got, body := r.call(t, http.MethodPut, contract.PathSnapshotResult, snapshotAttempt, result); got != http.StatusNoContent {
		t.Fatalf("first result = %d %s", got, body)
	}
	// Recorded with the job's default branch, and the log redacted again.
	want := store.SnapshotOutcome{Digest: digest, SHA: jobSHA, Branch: "trunk", Size: 52428800, Layers: 4,
		Log: "--- deps: go mod download exited 0 after 1s\ntoken " + contract.Redacted + "\n"}
	if len(r.engine.snapOutcomes) != 1 || r.engine.snapOutcomes[0] != want {
		t.Errorf("recorded %+v, want %+v", r.engine.snapOutcomes, want)
	}
	if len(r.engine.revoked) != 1 || r.engine.wakes != 1 {
		t.Errorf("after the first result: revoked %v, wakes %d", r.engine.revoked, r.engine.wakes)
	}
	r.engine.snapFirst = false
	if got, _ := r.call(t, http.MethodPut, contract.PathSnapshotResult, snapshotAttempt, `{"digest":"`+digest+`","sha":"`+jobSHA+`"}`); got != http.StatusNoContent {
		t.Fatalf("repeated result = %d", got)
	}
	if len(r.engine.snapResults) != 2 || len(r.engine.revoked) != 1 || r.engine.wakes != 1 {
		t.Errorf("a repeat was acted on: %+v", r.engine)
	}
}

func TestModelProxyAddsTheKeyRedactsItAndEndsTheSessionPastItsBudget(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	var gotAuth []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = append(gotAuth, r.Header.Get("Authorization")+" "+r.URL.Path)
		_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
		_, _ = io.WriteString(w, `{"echo":"`+key+`","usage":{"prompt_tokens":60,"completion_tokens":50}}`)
	}))
	t.Cleanup(upstream.Close)
	r := newRig(t, Options{
		Providers:   providers{"p": {Kind: "openai", BaseURL: upstream.URL + "/v1", Key: key}},
		TokenBudget: 100,
	})
	model := func(provider, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath(sessionAttempt, provider, "responses"), bytes.NewReader([]byte(body)))
		req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
		req.Header.Set("Authorization", "Bearer sk-agent-made-up")
		rec := httptest.NewRecorder()
		r.mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if got, _ := model("other", `{}`); got != http.StatusForbidden {
		t.Errorf("another provider = %d, want 403", got)
	}
	if got, _ := model("p", `{"model":"m-2"}`); got != http.StatusForbidden {
		t.Errorf("another model = %d, want 403", got)
	}
	if len(gotAuth) != 0 {
		t.Fatalf("a refused request reached the provider: %v", gotAuth)
	}
	got, body := model("p", `{"model":"m-1"}`)
	if got != http.StatusOK || strings.Contains(body, key) || !strings.Contains(body, "[redacted]") {
		t.Errorf("answer = %d %s", got, body)
	}
	if len(gotAuth) != 1 || gotAuth[0] != "Bearer "+key+" /v1/responses" {
		t.Errorf("the provider got %v", gotAuth)
	}
	if u := r.st.usage[sessionAttempt]; u.TotalTokens != 110 || u.Requests != 1 {
		t.Errorf("usage = %+v", u)
	}
	if len(r.engine.endedOverBudg) != 1 || r.engine.endedOverBudg[0] != 110 {
		t.Fatalf("EndForBudget calls = %v, want one at 110 tokens", r.engine.endedOverBudg)
	}
	// Spent: the next request is refused before it reaches the provider.
	if got, _ := model("p", `{"model":"m-1"}`); got != http.StatusTooManyRequests {
		t.Errorf("past the budget = %d, want 429", got)
	}
	if len(gotAuth) != 1 || len(r.engine.endedOverBudg) != 2 {
		t.Errorf("past the budget: provider calls %d, EndForBudget calls %v", len(gotAuth), r.engine.endedOverBudg)
	}
}

// The store's meter charges what the provider reported, cache reads and
// writes apart, and a successful answer without usage (a response still
// in progress, "usage": null, the shape of an OpenAI background answer:
// https://platform.openai.com/docs/guides/background — `background`
// itself is refused before it goes, decision 0055) its whole reservation,
// never 0.
func TestModelAnswersAreChargedInTheStoreAsTheProviderBillsThem(t *testing.T) {
	const outputReservation = 1000
	for _, tc := range []struct {
		name, kind, path, body, answer string
		want                           store.Usage
		reserved                       bool // want.TotalTokens is the reservation
	}{
		{"openai answer without usage", "openai", "responses", `{"model":"m-1","input":"hi"}`,
			`{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}`, store.Usage{Requests: 1}, true},
		{"anthropic stream with caching", "anthropic", "v1/messages", `{"model":"m-1","max_tokens":50,"stream":true,"messages":[]}`,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"cache_creation_input_tokens\":1200,\"cache_read_input_tokens\":48000,\"output_tokens\":1}}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\n",
			store.Usage{InputTokens: 49203, CacheReadTokens: 48000, CacheWriteTokens: 1200, OutputTokens: 40, TotalTokens: 49243, Requests: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the test reads no body
				_, _ = io.WriteString(w, tc.answer)
			}))
			t.Cleanup(upstream.Close)
			r := newRig(t, Options{
				Providers:         providers{"p": {Kind: tc.kind, BaseURL: upstream.URL, Key: "sk-test-0123456789abcdef"}},
				OutputReservation: outputReservation,
			})
			req := httptest.NewRequest(http.MethodPost, contract.EgressModelPath(sessionAttempt, "p", tc.path), strings.NewReader(tc.body))
			req.Header.Set(contract.HeaderSessionToken, tokenOf(sessionAttempt))
			rec := httptest.NewRecorder()
			r.mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("answered %d %s", rec.Code, rec.Body)
			}
			want := tc.want
			if tc.reserved {
				want.TotalTokens = int64(len(tc.body))/4 + 1 + outputReservation
			}
			if got := r.st.usage[sessionAttempt]; got != want {
				t.Errorf("charged %+v, want %+v", got, want)
			}
		})
	}
}

func TestChannelKeepsLiveOutputUnderTheSessionAndRefusesBadChunks(t *testing.T) {
	r := newRig(t, Options{})
	ok := `{"seq":1,"time":"2026-01-02T03:04:05Z","phase":"agent","command":"agent","text":"hello\nworld\n"}`
	if got, body := r.call(t, http.MethodPost, contract.PathOutput, sessionAttempt, ok); got != http.StatusNoContent {
		t.Fatalf("a chunk = %d %s", got, body)
	}
	if len(r.st.output) != 1 || r.st.outputKeep != contract.MaxLiveOutputBytes {
		t.Fatalf("kept %+v (tail %d)", r.st.output, r.st.outputKeep)
	}
	if c := r.st.output[0]; c.SessionID != "s1" || c.AttemptID != sessionAttempt || c.Seq != 1 || c.Phase != "agent" || c.Text != "hello\nworld\n" || !c.CreatedAt.Equal(epoch) {
		t.Errorf("chunk %+v", c)
	}
	for _, bad := range []string{
		`{"seq":2,"time":"2026-01-02T03:04:05Z","phase":"setup","command":"x","text":"a"}`,
		`{"seq":0,"time":"2026-01-02T03:04:05Z","phase":"agent","command":"x","text":"a"}`,
		`{"seq":2,"time":"2026-01-02T03:04:05Z","phase":"agent","command":"x","text":"a\u0000b"}`,
		`{"seq":2,"time":"2026-01-02T03:04:05Z","phase":"agent","command":"x","text":"` + strings.Repeat("a", contract.MaxOutputChunkTextBytes+1) + `"}`,
		`{"seq":2,"time":"2026-01-02T03:04:05Z","phase":"agent","command":"x","text":"a","extra":1}`,
	} {
		if got, body := r.call(t, http.MethodPost, contract.PathOutput, sessionAttempt, bad); got != http.StatusBadRequest {
			t.Errorf("%.80s = %d %s, want 400", bad, got, body)
		}
	}
	if got, _ := r.call(t, http.MethodPost, contract.PathOutput, endedAttempt, ok); got != http.StatusGone {
		t.Errorf("output of an ended attempt = %d, want 410", got)
	}
	if len(r.st.output) != 1 {
		t.Errorf("refused chunks were kept: %d", len(r.st.output))
	}
}

// A snapshot build's egress audit comes with its result, a failure's too,
// and is recorded with the build.
func TestSnapshotResultRecordsTheBuildsEgressAudit(t *testing.T) {
	r := newRig(t, Options{})
	r.engine.snapFirst = true
	result := `{"error":"setup command \"modules\" exited with status 1; nothing was pushed","egress":{"model":{"requests":0,"bytes":0},"registry":{"requests":1,"bytes":2048},"refused_count":1,` +
		`"records":[{"kind":"registry","phase":"setup","upstream":"goproxy","method":"GET","path":"fake.test/alpha/@v/v1.0.0.zip","status":200,"bytes":2048,"millis":30}],` +
		`"refused":[{"kind":"refused","phase":"setup","upstream":"elsewhere","method":"GET","path":"fake.test/beta/@v/list","status":403,"bytes":0,"millis":1,"why":"the server opens no registry named \"elsewhere\" to this attempt"}]}}`
	if got, body := r.call(t, http.MethodPut, contract.PathSnapshotResult, snapshotAttempt, result); got != http.StatusNoContent {
		t.Fatalf("result = %d %s", got, body)
	}
	if len(r.engine.snapOutcomes) != 1 {
		t.Fatalf("recorded %+v", r.engine.snapOutcomes)
	}
	a := r.engine.snapOutcomes[0].Egress
	if a == nil || a.Registry.Requests != 1 || len(a.Records) != 1 || a.Records[0].Path != "fake.test/alpha/@v/v1.0.0.zip" ||
		a.RefusedCount != 1 || len(a.Refused) != 1 || a.Refused[0].Upstream != "elsewhere" {
		t.Errorf("recorded egress %+v", a)
	}
}
