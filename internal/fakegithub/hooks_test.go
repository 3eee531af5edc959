package fakegithub

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestOnRefUpdate(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	base := s.CommitFiles("acme", "widgets", "main", map[string]string{"a.txt": "a\n"}, "seed")
	gh := appInstallClient(t, s, 1)

	var mu sync.Mutex
	var calls []string
	var updates []RefUpdate
	// The first hook has "CI" report on every commit a branch moves to:
	// it calls back into the Server, which would deadlock under its lock.
	s.OnRefUpdate(func(u RefUpdate) {
		mu.Lock()
		calls, updates = append(calls, "first"), append(updates, u)
		mu.Unlock()
		s.AddForeignCheckRun(u.Owner, u.Repo, CheckRun{AppSlug: "buildkite", AppID: 77, Name: "ci", HeadSHA: u.SHA})
	})
	s.OnRefUpdate(func(u RefUpdate) {
		mu.Lock()
		calls = append(calls, "second")
		mu.Unlock()
	})

	// Creating a ref.
	_, _, err := gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: github.String(base)}})
	if err != nil {
		t.Fatal(err)
	}
	// The hooks ran before the answer: CI's run is there already.
	if runs, _, err := gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", base, nil); err != nil || runs.GetTotal() != 1 {
		t.Errorf("runs after create: %+v %v", runs, err)
	}

	// Moving it; then moving it nowhere, and a refused move, call nothing.
	commit := inlineCommit(t, gh, "topic", []*github.TreeEntry{
		{Path: github.String("b.txt"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("b\n")},
	}, "b")
	move := func(sha string, force bool) error {
		_, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: github.String(sha)}}, force)
		return err
	}
	if err := move(commit.GetSHA(), false); err != nil {
		t.Fatal(err)
	}
	if err := move(commit.GetSHA(), false); err != nil {
		t.Fatal(err)
	}
	if err := move(base, false); err == nil {
		t.Fatal("a non-fast-forward went through")
	}
	// Seeding does not call them either.
	s.CommitFiles("acme", "widgets", "topic", map[string]string{"c.txt": "c\n"}, "c")

	mu.Lock()
	defer mu.Unlock()
	want := []RefUpdate{
		{Owner: "acme", Repo: "widgets", Ref: "refs/heads/topic", SHA: base},
		{Owner: "acme", Repo: "widgets", Ref: "refs/heads/topic", SHA: commit.GetSHA()},
	}
	if !reflect.DeepEqual(updates, want) {
		t.Errorf("updates = %+v, want %+v", updates, want)
	}
	if !reflect.DeepEqual(calls, []string{"first", "second", "first", "second"}) {
		t.Errorf("calls = %v", calls)
	}
	if runs := s.CheckRuns("acme", "widgets"); len(runs) != 2 || runs[1].HeadSHA != commit.GetSHA() {
		t.Errorf("CI runs = %+v", runs)
	}
}
