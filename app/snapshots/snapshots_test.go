package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/internal/fakeclock"
	"github.com/inspecthq/inspect/runner"
)

var start = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fakeStore records the scheduler's store calls, in order, and answers
// from its fields.
type fakeStore struct {
	calls     []string
	repo      store.SnapshotRepo
	repoErr   error
	queued    int
	queueErr  error
	attempts  map[string]store.Attempt
	created   []store.Attempt
	finished  []finished
	outcomes  []store.SnapshotOutcome
	startedAt []time.Time
	scheduled []scheduleCall
}

type finished struct {
	repoID      int64
	digest, why string
}

type scheduleCall struct {
	now          time.Time
	every, lease time.Duration
	maxBuilding  int
}

func (f *fakeStore) log(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeStore) WantSnapshots(_ context.Context, repoID int64, fullName string, installationID int64, now time.Time) error {
	f.log("want %d %s %d %s", repoID, fullName, installationID, now.Format(time.RFC3339))
	return nil
}

func (f *fakeStore) ForgetSnapshots(_ context.Context, repoID int64) error {
	f.log("forget %d", repoID)
	return nil
}

func (f *fakeStore) ScheduleSnapshotBuilds(_ context.Context, now time.Time, every, lease time.Duration, maxBuilding int) (int, error) {
	f.scheduled = append(f.scheduled, scheduleCall{now, every, lease, maxBuilding})
	return f.queued, f.queueErr
}

func (f *fakeStore) GetSnapshotRepo(_ context.Context, repoID int64) (store.SnapshotRepo, error) {
	f.log("get repo %d", repoID)
	return f.repo, f.repoErr
}

func (f *fakeStore) StartSnapshotBuild(_ context.Context, repoID int64, until, now time.Time) error {
	f.log("start build %d until %s", repoID, until.Format(time.RFC3339))
	f.startedAt = append(f.startedAt, now)
	return nil
}

func (f *fakeStore) SetSnapshotAttempt(_ context.Context, repoID int64, attemptID string, _ time.Time) error {
	f.log("set attempt %d %s", repoID, attemptID)
	return nil
}

func (f *fakeStore) FinishSnapshotBuild(_ context.Context, repoID int64, o store.SnapshotOutcome, _ time.Time) error {
	f.finished = append(f.finished, finished{repoID, o.Digest, o.Error})
	f.outcomes = append(f.outcomes, o)
	f.log("finish %d", repoID)
	return nil
}

func (f *fakeStore) CreateAttempt(_ context.Context, a store.Attempt, claimCode string, _ time.Time) error {
	if claimCode == "" {
		return errors.New("no claim code")
	}
	f.created = append(f.created, a)
	f.log("create attempt %s", a.ID)
	return nil
}

func (f *fakeStore) SetAttemptExternalID(_ context.Context, id, externalID string, _ time.Time) error {
	f.log("external id %s %s", id, externalID)
	return nil
}

func (f *fakeStore) GetAttempt(_ context.Context, id string) (store.Attempt, error) {
	a, ok := f.attempts[id]
	if !ok {
		return store.Attempt{}, store.ErrNotFound
	}
	return a, nil
}

func (f *fakeStore) EndAttempt(_ context.Context, id string, _ time.Time) error {
	f.log("end attempt %s", id)
	return nil
}

// fakeEngine stands in for the session engine's parts: its clients, repo
// configs, read tokens and workers.
type fakeEngine struct {
	calls    []string
	client   *github.Client
	ghErr    error
	cfg      config.Repo
	wakes    int
	minted   string
	revoked  []string
	loadedAt []time.Time
}

func (e *fakeEngine) Installation(_ context.Context, installationID int64) (*github.Client, error) {
	e.calls = append(e.calls, fmt.Sprintf("installation %d", installationID))
	return e.client, e.ghErr
}

func (e *fakeEngine) Load(_ context.Context, _ *github.Client, repoID int64, repo *github.Repository, fetchStart time.Time) (config.Repo, error) {
	e.calls = append(e.calls, fmt.Sprintf("load config %d %s", repoID, repo.GetFullName()))
	e.loadedAt = append(e.loadedAt, fetchStart)
	return e.cfg, nil
}

func (e *fakeEngine) Mint(_ context.Context, installationID, repoID int64) (string, time.Time, error) {
	e.calls = append(e.calls, fmt.Sprintf("mint %d %d", installationID, repoID))
	e.minted = "ghs_read"
	return e.minted, start.Add(time.Hour), nil
}

func (e *fakeEngine) Revoke(_ context.Context, installationID int64, token string, _ time.Time) {
	e.revoked = append(e.revoked, fmt.Sprintf("%d %s", installationID, token))
}

func (e *fakeEngine) RevokeAttempt(_ context.Context, attemptID string) {
	e.revoked = append(e.revoked, "attempt "+attemptID)
}

func (e *fakeEngine) wake() { e.wakes++ }

// fakeExecutor records starts and cancels.
type fakeExecutor struct {
	started   []runner.Attempt
	cancelled []string
	startErr  error
}

func (x *fakeExecutor) Start(_ context.Context, a runner.Attempt) (string, error) {
	x.started = append(x.started, a)
	return "build-7", x.startErr
}

func (x *fakeExecutor) Cancel(_ context.Context, externalID string) error {
	x.cancelled = append(x.cancelled, externalID)
	return nil
}

func (x *fakeExecutor) State(context.Context, string) (runner.AttemptState, error) {
	return runner.AttemptState{}, nil
}

// wantsSnapshots is a repo config that asks for snapshots.
func wantsSnapshots() config.Repo {
	c, err := config.ParseRepo([]byte("snapshot:\n  setup: [{name: deps, run: [go, mod, download]}]\n  caches: [{path: /cache/go, lockfiles: [go.sum]}]\n"))
	if err != nil {
		panic(err) // a constant that parses
	}
	return c
}

func newScheduler(st *fakeStore, e *fakeEngine, o Options) *Scheduler {
	o.Store, o.GitHub, o.RepoConfigs, o.ReadTokens, o.Wake, o.Clock = st, e, e, e, e.wake, fakeclock.New(start)
	if o.NewID == nil {
		o.NewID = func() string { return "att1" }
	}
	return New(o)
}

func TestScheduleFollowsTheRepoConfig(t *testing.T) {
	off := false
	disabled := wantsSnapshots()
	disabled.Enabled = &off
	cases := []struct {
		name   string
		store  string
		repoID int64
		cfg    config.Repo
		want   []string
	}{
		{"snapshots off on the server", "", 42, wantsSnapshots(), nil},
		{"no repo id", "oci:/x", 0, wantsSnapshots(), nil},
		{"wanted and enabled: on the schedule", "oci:/x", 42, wantsSnapshots(), []string{"want 42 o/r 9 " + start.Format(time.RFC3339)}},
		{"wanted but paused: off it", "oci:/x", 42, disabled, []string{"forget 42"}},
		{"not wanted: off it", "oci:/x", 42, config.Repo{}, []string{"forget 42"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{}
			s := newScheduler(st, &fakeEngine{}, Options{Snapshots: config.Snapshots{Store: c.store}})
			if err := s.Schedule(context.Background(), 9, c.repoID, "o/r", c.cfg); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st.calls, c.want) {
				t.Errorf("store calls = %q, want %q", st.calls, c.want)
			}
		})
	}
}

func TestQueueBuildsOneAtATime(t *testing.T) {
	cases := []struct {
		name      string
		store     string
		queued    int
		queueErr  error
		wantCalls int
		wantWakes int
		wantErr   bool
	}{
		{name: "snapshots off", store: ""},
		{name: "nothing due", store: "oci:/x", wantCalls: 1},
		{name: "one due wakes the workers", store: "oci:/x", queued: 1, wantCalls: 1, wantWakes: 1},
		{name: "a failure is returned", store: "oci:/x", queueErr: errors.New("db down"), wantCalls: 1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &fakeStore{queued: c.queued, queueErr: c.queueErr}
			e := &fakeEngine{}
			s := newScheduler(st, e, Options{Snapshots: config.Snapshots{Store: c.store, Refresh: 30 * time.Minute}})
			err := s.QueueBuilds(context.Background())
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(st.scheduled) != c.wantCalls || e.wakes != c.wantWakes {
				t.Fatalf("scheduled %d times, woke %d; want %d, %d", len(st.scheduled), e.wakes, c.wantCalls, c.wantWakes)
			}
			for _, got := range st.scheduled {
				if want := (scheduleCall{start, 30 * time.Minute, time.Hour, 1}); got != want {
					t.Errorf("ScheduleSnapshotBuilds(%+v), want %+v", got, want)
				}
			}
		})
	}
}

// pushSnapshot puts one minimal snapshot of repo in the layout at dir.
func pushSnapshot(t *testing.T, dir, repo string) string {
	t.Helper()
	st, err := images.NewLayoutStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "go.sum"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	built, err := images.Assemble(images.Input{Base: base, Repo: repo, SHA: strings.Repeat("1", 40), Version: "test", Built: start, WorkspaceDir: ws})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := st.Push(context.Background(), built.Image)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Digest.String()
}

func TestPin(t *testing.T) {
	dir := t.TempDir()
	digest := pushSnapshot(t, dir, "o/r")
	storeName := images.LayoutPrefix + dir
	ctx := context.Background()

	s := newScheduler(&fakeStore{}, &fakeEngine{}, Options{Snapshots: config.Snapshots{Store: storeName}, CommandTimeout: 10 * time.Minute})
	s.Pin(ctx, "o/r", nil) // a repo without a snapshot section: nothing to pin, and no panic
	pin := func(s *Scheduler, repo string) *contract.Snapshot {
		snap := wantsSnapshots().SessionSnapshot(10*time.Minute, 5*time.Minute)
		s.Pin(ctx, repo, snap)
		return snap
	}
	got := pin(s, "o/r")
	if got.Digest != digest || got.Store != storeName {
		t.Fatalf("pinned %+v, want %s in %s", got, digest, storeName)
	}
	if len(got.Caches) != 1 || got.Caches[0].Path != "/cache/go" || len(got.Setup) != 1 {
		t.Errorf("caches and setup changed: %+v", got)
	}

	// Another repo has none yet: the caches and setup, no image.
	if got := pin(s, "o/other"); got.Digest != "" || got.Store != "" || len(got.Caches) != 1 {
		t.Errorf("without a snapshot: %+v", got)
	}
	// Snapshots off: the same, without reading any store.
	off := newScheduler(&fakeStore{}, &fakeEngine{}, Options{})
	if got := pin(off, "o/r"); got.Digest != "" || len(got.Setup) != 1 {
		t.Errorf("snapshots off: %+v", got)
	}
}

// A relative layout path is made absolute, as config.Load does.
func TestOpenMakesALayoutPathAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := newScheduler(&fakeStore{}, &fakeEngine{}, Options{Snapshots: config.Snapshots{Store: images.LayoutPrefix + "snaps"}})
	_, name, err := s.open()
	if err != nil {
		t.Fatal(err)
	}
	if want := images.LayoutPrefix + filepath.Join(dir, "snaps"); name != want {
		t.Errorf("name = %q, want %q", name, want)
	}
}

func ghError(code int) error {
	return &github.ErrorResponse{Response: &http.Response{StatusCode: code, Request: &http.Request{Method: "GET"}}, Message: http.StatusText(code)}
}

func TestIsGone(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"not found", ghError(http.StatusNotFound), true},
		{"forbidden", ghError(http.StatusForbidden), true},
		{"wrapped not found", fmt.Errorf("reading the repository: %w", ghError(http.StatusNotFound)), true},
		{"rate limited", &github.RateLimitError{Response: &http.Response{StatusCode: http.StatusForbidden}}, false},
		{"secondary rate limit", &github.AbuseRateLimitError{Response: &http.Response{StatusCode: http.StatusForbidden}}, false},
		{"server error", ghError(http.StatusBadGateway), false},
		{"not GitHub's", errors.New("disk full"), false},
	}
	for _, c := range cases {
		if got := isGone(c.err); got != c.want {
			t.Errorf("%s: isGone = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBuildWorkRecordsEveryOutcome(t *testing.T) {
	ctx := context.Background()
	repo := store.SnapshotRepo{RepoID: 42, FullName: "o/r", InstallationID: 9}

	t.Run("bad payload", func(t *testing.T) {
		s := newScheduler(&fakeStore{}, &fakeEngine{}, Options{})
		err := s.BuildWork(ctx, &store.Work{Payload: "x"})
		if err == nil || !strings.HasPrefix(err.Error(), `snapshot build payload "x": `) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no longer wanted", func(t *testing.T) {
		st := &fakeStore{repoErr: store.ErrNotFound}
		s := newScheduler(st, &fakeEngine{}, Options{})
		if err := s.BuildWork(ctx, &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if want := []string{"get repo 42"}; !reflect.DeepEqual(st.calls, want) {
			t.Errorf("calls = %q", st.calls)
		}
	})
	t.Run("nowhere to build", func(t *testing.T) {
		st := &fakeStore{repo: repo}
		s := newScheduler(st, &fakeEngine{}, Options{ExecutorKind: "none"})
		if err := s.BuildWork(ctx, &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		until := start.Add(time.Hour).Format(time.RFC3339)
		if want := []string{"get repo 42", "start build 42 until " + until, "finish 42"}; !reflect.DeepEqual(st.calls, want) {
			t.Errorf("calls = %q", st.calls)
		}
		if want := (finished{42, "", "snapshot builds need executor.kind local or buildkite (it is none)"}); len(st.finished) != 1 || st.finished[0] != want {
			t.Errorf("finished = %+v", st.finished)
		}
	})
	t.Run("the repo is gone: off the schedule", func(t *testing.T) {
		st := &fakeStore{repo: repo}
		e := &fakeEngine{ghErr: ghError(http.StatusNotFound)}
		s := newScheduler(st, e, Options{Builder: func(context.Context, runner.SnapshotBuild) (runner.SnapshotResult, error) {
			t.Error("built a repo that is gone")
			return runner.SnapshotResult{}, nil
		}})
		if err := s.BuildWork(ctx, &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if n := len(st.calls); n < 2 || st.calls[n-2] != "finish 42" || st.calls[n-1] != "forget 42" {
			t.Errorf("calls = %q", st.calls)
		}
		if len(st.finished) != 1 || st.finished[0].why == "" {
			t.Errorf("finished = %+v", st.finished)
		}
		if len(e.revoked) != 0 || e.minted != "" {
			t.Errorf("minted %q, revoked %q before reaching the repo", e.minted, e.revoked)
		}
	})
}

// fakeRepoAPI answers the two reads a build makes of its repo: the repo
// and its default branch's head.
func fakeRepoAPI(t *testing.T, sha string) *github.Client {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v3/repos/o/r", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"id":42,"name":"r","full_name":"o/r","default_branch":"trunk","owner":{"login":"o"}}`)
	})
	mux.HandleFunc("GET /api/v3/repos/o/r/git/ref/heads/trunk", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"ref":"refs/heads/trunk","object":{"type":"commit","sha":%q}}`, sha)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := github.NewClient(nil).WithEnterpriseURLs(srv.URL, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBuildHereUsesAReadTokenAndRevokesIt(t *testing.T) {
	sha := strings.Repeat("a", 40)
	dir := t.TempDir()
	st := &fakeStore{repo: store.SnapshotRepo{RepoID: 42, FullName: "o/r", InstallationID: 9}}
	e := &fakeEngine{client: fakeRepoAPI(t, sha), cfg: wantsSnapshots()}
	var logs bytes.Buffer
	var builds []runner.SnapshotBuild
	built := pushSnapshot(t, dir, "o/r")
	s := newScheduler(st, e, Options{
		Snapshots: config.Snapshots{Store: images.LayoutPrefix + dir, Keep: 5}, CommandTimeout: 2 * time.Hour,
		WebURL: "https://github.example/", WorkDir: "/var/inspect", Version: "v1",
		Builder: func(_ context.Context, b runner.SnapshotBuild) (runner.SnapshotResult, error) {
			if len(e.revoked) != 0 {
				t.Error("the token was revoked before the build")
			}
			builds = append(builds, b)
			snap, err := b.Store.Latest(context.Background(), "o/r")
			return runner.SnapshotResult{Snapshot: snap, Footprint: images.Footprint{Size: 123456, Layers: 3},
				Setup: []contract.CommandResult{{Phase: contract.PhaseSetup, Name: "snapshot deps", Argv: []string{"go", "mod", "download"}, DurationMS: 1500,
					OutputTail: "go: downloading example.com/dep v1.0.0\nAuthorization: Bearer ghp_" + strings.Repeat("x", 36) + "\n"}}}, err
		},
	})
	ctx := zerolog.New(&logs).WithContext(context.Background())
	if err := s.BuildWork(ctx, &store.Work{Payload: "42"}); err != nil {
		t.Fatal(err)
	}
	if len(builds) != 1 {
		t.Fatalf("builds = %d\n%s", len(builds), logs.String())
	}
	b := builds[0]
	wantRepo := contract.Repo{Owner: "o", Name: "r", ID: 42, DefaultBranch: "trunk", CloneURL: "https://github.example/o/r.git"}
	if b.Repo != wantRepo || b.SHA != sha || b.Token != "ghs_read" || b.Version != "v1" || b.WorkDir != "/var/inspect" || b.Base != nil {
		t.Errorf("build = %+v", b)
	}
	// A build's setup is bounded by the build's lease.
	if len(b.Setup) != 1 || time.Duration(b.Setup[0].Timeout) != time.Hour || len(b.Caches) != 1 {
		t.Errorf("setup %+v, caches %+v", b.Setup, b.Caches)
	}
	if want := []string{"9 ghs_read"}; !reflect.DeepEqual(e.revoked, want) {
		t.Errorf("revoked = %q, want %q", e.revoked, want)
	}
	// Reading the config keeps the schedule in step, explicitly.
	if !contains(st.calls, "want 42 o/r 9 "+start.Format(time.RFC3339)) || !contains(e.calls, "load config 42 o/r") {
		t.Errorf("store calls %q, engine calls %q", st.calls, e.calls)
	}
	if want := (finished{42, built, ""}); len(st.finished) != 1 || st.finished[0] != want {
		t.Fatalf("finished = %+v, want %+v", st.finished, want)
	}
	// With it, what the page shows: the commit and the default branch it
	// was built from, its footprint, and the setup's log, redacted.
	o := st.outcomes[0]
	if o.SHA != strings.Repeat("1", 40) || o.Branch != "trunk" || o.Size != 123456 || o.Layers != 3 {
		t.Errorf("outcome = sha %q branch %q size %d layers %d", o.SHA, o.Branch, o.Size, o.Layers)
	}
	if !strings.HasPrefix(o.Log, "--- snapshot deps: go mod download exited with status 0 after 1.5s\ngo: downloading example.com/dep v1.0.0\n") ||
		strings.Contains(o.Log, "ghp_") || !strings.Contains(o.Log, contract.Redacted) {
		t.Errorf("log = %q", o.Log)
	}
	if !strings.Contains(logs.String(), `"message":"snapshot built"`) || !strings.Contains(logs.String(), `"repo":"o/r"`) {
		t.Errorf("logs = %s", logs.String())
	}
}

func TestBuildRefusesARepoThatNoLongerWantsSnapshots(t *testing.T) {
	st := &fakeStore{repo: store.SnapshotRepo{RepoID: 42, FullName: "o/r", InstallationID: 9}}
	e := &fakeEngine{client: fakeRepoAPI(t, strings.Repeat("a", 40))}
	s := newScheduler(st, e, Options{
		Snapshots: config.Snapshots{Store: images.LayoutPrefix + t.TempDir()},
		Builder: func(context.Context, runner.SnapshotBuild) (runner.SnapshotResult, error) {
			t.Error("built a repo that no longer asks for snapshots")
			return runner.SnapshotResult{}, nil
		},
	})
	if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
		t.Fatal(err)
	}
	if !contains(st.calls, "forget 42") || e.minted != "" {
		t.Errorf("calls %q, minted %q", st.calls, e.minted)
	}
	if want := (finished{42, "", "the repo's config no longer asks for snapshots"}); len(st.finished) != 1 || st.finished[0] != want {
		t.Errorf("finished = %+v", st.finished)
	}
}

func TestDispatchOnTheExecutor(t *testing.T) {
	sha := strings.Repeat("b", 40)
	newRun := func(stale string, startErr error) (*fakeStore, *fakeEngine, *fakeExecutor, *Scheduler) {
		st := &fakeStore{
			repo:     store.SnapshotRepo{RepoID: 42, FullName: "o/r", InstallationID: 9, BuildingAttempt: stale},
			attempts: map[string]store.Attempt{"old": {ID: "old", ExternalID: "build-6"}},
		}
		e := &fakeEngine{client: fakeRepoAPI(t, sha), cfg: wantsSnapshots()}
		x := &fakeExecutor{startErr: startErr}
		s := newScheduler(st, e, Options{
			Snapshots:      config.Snapshots{Store: images.LayoutPrefix + t.TempDir(), BaseImage: "registry.example/base@sha256:" + strings.Repeat("0", 64)},
			SessionTimeout: 40 * time.Minute, CommandTimeout: 10 * time.Minute,
			Executor: x, ChannelURL: "https://inspect.example/channel", WebURL: "https://github.example",
		})
		return st, e, x, s
	}

	t.Run("started", func(t *testing.T) {
		st, e, x, s := newRun("", nil)
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if len(st.finished) != 0 {
			t.Errorf("finished %+v: the result comes over the channel", st.finished)
		}
		if len(st.created) != 1 || len(x.started) != 1 {
			t.Fatalf("created %+v, started %+v", st.created, x.started)
		}
		a, run := st.created[0], x.started[0]
		deadline := start.Add(40 * time.Minute) // min(lease, sessions.timeout)
		if a.ID != "att1" || a.Kind != string(contract.KindSnapshot) || a.RepoID != 42 || !a.Deadline.Equal(deadline) ||
			!strings.Contains(a.Spec, `"sha":"`+sha+`"`) {
			t.Errorf("attempt = %+v", a)
		}
		if run.SessionID != "snapshot-42-att1" || run.AttemptID != "att1" || run.Number != 1 || run.ChannelURL != "https://inspect.example/channel" ||
			run.ClaimCode == "" || !run.Deadline.Equal(deadline) {
			t.Errorf("run = %+v", run)
		}
		tail := st.calls[len(st.calls)-3:]
		if want := []string{"create attempt att1", "set attempt 42 att1", "external id att1 build-7"}; !reflect.DeepEqual(tail, want) {
			t.Errorf("calls end %q, want %q", tail, want)
		}
		if e.minted != "" || len(x.cancelled) != 0 {
			t.Errorf("minted %q, cancelled %q", e.minted, x.cancelled)
		}
	})
	t.Run("a stale build is stopped first", func(t *testing.T) {
		st, e, x, s := newRun("old", nil)
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(x.cancelled, []string{"build-6"}) || !reflect.DeepEqual(e.revoked, []string{"attempt old"}) {
			t.Errorf("cancelled %q, revoked %q", x.cancelled, e.revoked)
		}
		ended, created := index(st.calls, "end attempt old"), index(st.calls, "create attempt att1")
		if ended < 0 || created < ended {
			t.Errorf("calls = %q: the stale attempt ends before the new one", st.calls)
		}
	})
	t.Run("the executor refuses", func(t *testing.T) {
		st, _, _, s := newRun("", errors.New("no agents"))
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if !contains(st.calls, "end attempt att1") || contains(st.calls, "external id att1 build-7") {
			t.Errorf("calls = %q", st.calls)
		}
		if want := (finished{42, "", "starting the snapshot build: no agents"}); len(st.finished) != 1 || st.finished[0] != want {
			t.Errorf("finished = %+v", st.finished)
		}
	})
	t.Run("the executor is at capacity: tried again, not failed", func(t *testing.T) {
		st, _, _, s := newRun("", runner.ErrAtCapacity)
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); !errors.Is(err, runner.ErrAtCapacity) {
			t.Fatalf("BuildWork = %v, want the capacity error for the workers to retry", err)
		}
		if len(st.finished) != 0 || !contains(st.calls, "end attempt att1") {
			t.Errorf("finished %+v, calls %q", st.finished, st.calls)
		}
	})
	t.Run("the job carries the repo's registries", func(t *testing.T) {
		st, _, _, s := newRun("", nil)
		s.registries = func(fullName string, _ config.Repo) ([]contract.Registry, error) {
			return []contract.Registry{{Name: "gomods", Kind: "goproxy", Phases: []contract.Phase{contract.PhaseSetup}, SumDB: config.DefaultSumDB}}, nil
		}
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		var job contract.SnapshotJob
		if err := json.Unmarshal([]byte(st.created[0].Spec), &job); err != nil || len(job.Registries) != 1 || job.Registries[0].Name != "gomods" {
			t.Fatalf("job registries = %+v (%v)", job.Registries, err)
		}
		st, _, x, s := newRun("", nil)
		s.registries = func(string, config.Repo) ([]contract.Registry, error) {
			return nil, errors.New("no registry named npmjs")
		}
		if err := s.BuildWork(context.Background(), &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		if len(x.started) != 0 || len(st.finished) != 1 || !strings.Contains(st.finished[0].why, "no registry named npmjs") {
			t.Errorf("started %+v, finished %+v", x.started, st.finished)
		}
	})
}

func TestCollectWork(t *testing.T) {
	ctx := context.Background()
	t.Run("snapshots off", func(t *testing.T) {
		st := &fakeStore{}
		s := newScheduler(st, &fakeEngine{}, Options{})
		if err := s.CollectWork(ctx, &store.Work{Payload: "42"}); err != nil || len(st.calls) != 0 {
			t.Errorf("err %v, calls %q", err, st.calls)
		}
	})
	t.Run("bad payload", func(t *testing.T) {
		s := newScheduler(&fakeStore{}, &fakeEngine{}, Options{})
		if err := s.CollectWork(ctx, &store.Work{Payload: ""}); err == nil || !strings.HasPrefix(err.Error(), `collect payload "": `) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("keeps snapshots.keep", func(t *testing.T) {
		dir := t.TempDir()
		pushSnapshot(t, dir, "o/r")
		st := &fakeStore{repo: store.SnapshotRepo{RepoID: 42, FullName: "o/r"}}
		s := newScheduler(st, &fakeEngine{}, Options{Snapshots: config.Snapshots{Store: images.LayoutPrefix + dir, Keep: 1}})
		if err := s.CollectWork(ctx, &store.Work{Payload: "42"}); err != nil {
			t.Fatal(err)
		}
		snap := wantsSnapshots().SessionSnapshot(time.Minute, time.Hour)
		if s.Pin(ctx, "o/r", snap); snap.Digest == "" {
			t.Error("collection removed the newest snapshot")
		}
	})
}

func contains(calls []string, want string) bool { return index(calls, want) >= 0 }

func index(calls []string, want string) int {
	for i, c := range calls {
		if c == want {
			return i
		}
	}
	return -1
}
