package repoconfig

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeStore is a cache of one entry per repo.
type fakeStore struct {
	entries map[int64]store.RepoConfigEntry
}

func (f *fakeStore) CachedRepoConfig(_ context.Context, repoID int64, _ time.Time) (store.RepoConfigEntry, bool, error) {
	e, ok := f.entries[repoID]
	return e, ok, nil
}

func (f *fakeStore) PutRepoConfig(_ context.Context, e store.RepoConfigEntry) error {
	f.entries[e.RepoID] = e
	return nil
}

func (f *fakeStore) ForgetOwnerDefaults(context.Context, string) error { return nil }

func TestCachedConfigIsKnownOnlyWhenFreshAndParsed(t *testing.T) {
	fresh, old := now.Add(-time.Minute), now.Add(-2*time.Hour)
	st := &fakeStore{entries: map[int64]store.RepoConfigEntry{
		1: {RepoID: 1, Status: store.ConfigDefaults, FetchedAt: fresh},
		2: {RepoID: 2, Status: store.ConfigFile, Content: "label: fix-me\n", FetchedAt: fresh},
		3: {RepoID: 3, Status: store.ConfigFile, Content: "label: fix-me\n", FetchedAt: old},
		4: {RepoID: 4, Status: store.ConfigFile, Content: "no_such_key: 1\n", FetchedAt: fresh},
		5: {RepoID: 5, Status: store.ConfigInvalid, Error: "bad", FetchedAt: fresh},
	}}
	r := &Configs{Store: st, Now: func() time.Time { return now }, MaxAge: time.Hour}
	cases := []struct {
		repo      int64
		wantKnown bool
		wantLabel string
	}{
		{1, true, ""},       // no file: the defaults, known
		{2, true, "fix-me"}, // a file that parses
		{3, false, ""},      // too old to refuse on
		{4, false, ""},      // no longer parses: a miss
		{5, false, ""},      // cached as invalid: a miss
		{99, false, ""},     // not cached at all
	}
	for _, c := range cases {
		cfg, known, err := r.Cached(context.Background(), c.repo)
		if err != nil || known != c.wantKnown || cfg.Label != c.wantLabel {
			t.Errorf("repo %d: Cached = label %q, known %v, %v; want %q, %v", c.repo, cfg.Label, known, err, c.wantLabel, c.wantKnown)
		}
	}
}

func TestCachedParsesAFileOnceUntilItChanges(t *testing.T) {
	st := &fakeStore{entries: map[int64]store.RepoConfigEntry{
		2: {RepoID: 2, Status: store.ConfigFile, Content: "label: one\n", FetchedAt: now},
	}}
	r := &Configs{Store: st, Now: func() time.Time { return now }, MaxAge: time.Hour}
	first, _, _ := r.Cached(context.Background(), 2)
	if first.Label != "one" {
		t.Fatalf("label = %q, want one", first.Label)
	}
	if got := r.parsed.m[2]; got.content != "label: one\n" || !got.ok {
		t.Fatalf("memo = %+v, want the parsed file", got)
	}
	st.entries[2] = store.RepoConfigEntry{RepoID: 2, Status: store.ConfigFile, Content: "label: two\n", FetchedAt: now}
	second, known, _ := r.Cached(context.Background(), 2)
	if !known || second.Label != "two" {
		t.Errorf("after the file changed: label %q, known %v; want two, true", second.Label, known)
	}
}

func TestSessionConfigFailsClosedOnAnInvalidFile(t *testing.T) {
	st := &fakeStore{entries: map[int64]store.RepoConfigEntry{
		5: {RepoID: 5, Status: store.ConfigInvalid, Source: "o/r", Error: "line 1: bad", FetchedAt: now},
		6: {RepoID: 6, Status: store.ConfigFile, Source: "o/r", Content: "no_such_key: 1\n", FetchedAt: now},
	}}
	r := &Configs{Store: st, Now: func() time.Time { return now }, MaxAge: time.Hour}
	for _, repo := range []int64{5, 6} {
		_, err := r.ForSession(context.Background(), nil, store.Session{RepoID: repo})
		var cfgErr *config.RepoConfigError
		if !errors.As(err, &cfgErr) || cfgErr.Source != "o/r" {
			t.Errorf("repo %d: ForSession = %v, want a *config.RepoConfigError from o/r", repo, err)
		}
	}
}
