package ghwrite

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-github/v62/github"
)

func TestFindCheckRunByExternalIDAcrossPages(t *testing.T) {
	tests := []struct {
		name       string
		pages      [][]*github.CheckRun
		want       int64
		wantListed []string
	}{
		{name: "on the second page", pages: [][]*github.CheckRun{{checkRun(1, "other")}, {checkRun(2, "s1")}},
			want: 2, wantListed: []string{"abc Inspect 0", "abc Inspect 2"}},
		{name: "another session's run is not ours", pages: [][]*github.CheckRun{{checkRun(1, "s2"), checkRun(3, "")}},
			want: 0, wantListed: []string{"abc Inspect 0"}},
		{name: "none", want: 0, wantListed: []string{"abc Inspect 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := &fakeChecks{pages: tt.pages}
			got, err := FindCheckRun(context.Background(), checks, "o", "r", "abc", "Inspect", "s1")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("FindCheckRun = %d, want %d", got, tt.want)
			}
			if !slices.Equal(checks.listed, tt.wantListed) {
				t.Errorf("listed %q, want %q", checks.listed, tt.wantListed)
			}
		})
	}
}

func TestEnsureCheckRun(t *testing.T) {
	opts := github.CreateCheckRunOptions{Name: "Inspect", HeadSHA: "abc", ExternalID: github.String("s1"), Status: github.String("queued")}
	tests := []struct {
		name        string
		pages       [][]*github.CheckRun
		mayBeReplay bool
		want        int64
		wantListed  int
		wantCreated int
	}{
		{name: "a replay finds the earlier run and creates none", pages: [][]*github.CheckRun{{checkRun(5, "s1")}}, mayBeReplay: true,
			want: 5, wantListed: 1},
		{name: "a replay that finds none creates it", pages: [][]*github.CheckRun{{checkRun(5, "s2")}}, mayBeReplay: true,
			want: 700, wantListed: 1, wantCreated: 1},
		{name: "a first try creates without looking", pages: [][]*github.CheckRun{{checkRun(5, "s1")}},
			want: 700, wantCreated: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := &fakeChecks{pages: tt.pages}
			got, err := EnsureCheckRun(context.Background(), checks, "o", "r", opts, tt.mayBeReplay)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || len(checks.listed) != tt.wantListed || len(checks.created) != tt.wantCreated {
				t.Errorf("EnsureCheckRun = %d after %d lists and %d creates; want %d, %d, %d",
					got, len(checks.listed), len(checks.created), tt.want, tt.wantListed, tt.wantCreated)
			}
			if tt.wantListed > 0 && checks.listed[0] != "abc Inspect 0" {
				t.Errorf("searched %q, want the head SHA and the run's name", checks.listed[0])
			}
			if tt.wantCreated > 0 && checks.created[0].GetExternalID() != "s1" {
				t.Errorf("created %+v, want the options as given", checks.created[0])
			}
		})
	}
	boom := errors.New("boom")
	if _, err := EnsureCheckRun(context.Background(), &fakeChecks{err: boom}, "o", "r", opts, false); !errors.Is(err, boom) || err.Error() != "creating the check run: boom" {
		t.Errorf("EnsureCheckRun error = %v", err)
	}
}

func TestCheckRunUpdatesSetTheirStatusAndWrapTheirErrors(t *testing.T) {
	checks := &fakeChecks{}
	opts := github.UpdateCheckRunOptions{Name: "Inspect", Conclusion: github.String("success")}
	if err := StartCheckRun(context.Background(), checks, "o", "r", 1, github.UpdateCheckRunOptions{Name: "Inspect"}); err != nil {
		t.Fatal(err)
	}
	if err := ConcludeCheckRun(context.Background(), checks, "o", "r", 1, opts); err != nil {
		t.Fatal(err)
	}
	if len(checks.updated) != 2 || checks.updated[0].GetStatus() != "in_progress" || checks.updated[1].GetStatus() != "completed" || checks.updated[1].GetConclusion() != "success" {
		t.Errorf("updates %+v, want in_progress then completed with the conclusion", checks.updated)
	}
	boom := errors.New("boom")
	failing := &fakeChecks{err: boom}
	if err := StartCheckRun(context.Background(), failing, "o", "r", 1, opts); err == nil || err.Error() != "marking the check run in progress: boom" {
		t.Errorf("StartCheckRun error = %v", err)
	}
	if err := ConcludeCheckRun(context.Background(), failing, "o", "r", 1, opts); err == nil || err.Error() != "concluding the check run: boom" {
		t.Errorf("ConcludeCheckRun error = %v", err)
	}
	ann := []*github.CheckRunAnnotation{{Path: github.String("a.go")}}
	if err := AnnotateCheckRun(context.Background(), failing, "o", "r", 1, "Inspect", "t", "s", ann); err != boom {
		t.Errorf("AnnotateCheckRun error = %v, want GitHub's unwrapped", err)
	}
	if err := AnnotateCheckRun(context.Background(), checks, "o", "r", 1, "Inspect", "t", "s", nil); err != nil || len(checks.updated) != 2 {
		t.Errorf("no annotations: %v after %d updates, want no request", err, len(checks.updated))
	}
	if err := AnnotateCheckRun(context.Background(), checks, "o", "r", 1, "Inspect", "t", "s", ann); err != nil {
		t.Fatal(err)
	}
	got := checks.updated[2]
	if got.Name != "Inspect" || got.Status != nil || got.Output.GetTitle() != "t" || got.Output.GetSummary() != "s" || len(got.Output.Annotations) != 1 {
		t.Errorf("annotation update %+v, want the name, output and annotations and no status", got)
	}
}
