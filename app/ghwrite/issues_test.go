package ghwrite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-github/v62/github"
)

// fakeLabels takes labels off and puts them on, failing as told.
type fakeLabels struct {
	removeErr map[string]error
	addErr    error
	calls     []string
}

func (f *fakeLabels) RemoveLabelForIssue(_ context.Context, _, _ string, number int, label string) (*github.Response, error) {
	f.calls = append(f.calls, fmt.Sprintf("remove %s from #%d", label, number))
	return nil, f.removeErr[label]
}

func (f *fakeLabels) AddLabelsToIssue(_ context.Context, _, _ string, number int, labels []string) ([]*github.Label, *github.Response, error) {
	f.calls = append(f.calls, fmt.Sprintf("add %v to #%d", labels, number))
	return nil, nil, f.addErr
}

func TestSyncLabels(t *testing.T) {
	boom := errors.New("boom")
	all := []string{"remove inspect from #3", "remove inspect:failed from #3", "add [inspect:done] to #3"}
	tests := []struct {
		name      string
		labels    fakeLabels
		wantErr   string
		wantCalls []string
	}{
		{name: "both off, one on", wantCalls: all},
		{name: "a label that is not there is fine", labels: fakeLabels{removeErr: map[string]error{"inspect:failed": statusErr(http.StatusNotFound)}}, wantCalls: all},
		{name: "a failed removal stops before the add", labels: fakeLabels{removeErr: map[string]error{"inspect": boom}},
			wantErr: "removing the inspect label: boom", wantCalls: all[:1]},
		{name: "a failed add", labels: fakeLabels{addErr: boom}, wantErr: "adding the inspect:done label: boom", wantCalls: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels := &tt.labels
			err := SyncLabels(context.Background(), labels, "o", "r", 3, []string{"inspect", "inspect:failed"}, "inspect:done")
			if errText(err) != tt.wantErr {
				t.Errorf("SyncLabels error %q, want %q", errText(err), tt.wantErr)
			}
			if !slices.Equal(labels.calls, tt.wantCalls) {
				t.Errorf("calls %q, want %q", labels.calls, tt.wantCalls)
			}
		})
	}
}

// TestSyncLabelsEscapesTheNameOnce: the name goes into the path escaped
// once; go-github v62 adds no escape of its own.
func TestSyncLabelsEscapesTheNameOnce(t *testing.T) {
	labels := &fakeLabels{}
	if err := SyncLabels(context.Background(), labels, "o", "r", 3, []string{"team/inspect", "a b?#%"}, "inspect:done"); err != nil {
		t.Fatal(err)
	}
	want := []string{"remove team%2Finspect from #3", "remove a%20b%3F%23%25 from #3", "add [inspect:done] to #3"}
	if !slices.Equal(labels.calls, want) {
		t.Errorf("calls %q, want %q", labels.calls, want)
	}
}

// fakeReactions records the reactions asked for.
type fakeReactions struct {
	calls []string
	err   error
}

func (f *fakeReactions) CreateIssueCommentReaction(_ context.Context, _, _ string, id int64, content string) (*github.Reaction, *github.Response, error) {
	f.calls = append(f.calls, fmt.Sprintf("issue comment %d %s", id, content))
	return nil, nil, f.err
}

func (f *fakeReactions) CreatePullRequestCommentReaction(_ context.Context, _, _ string, id int64, content string) (*github.Reaction, *github.Response, error) {
	f.calls = append(f.calls, fmt.Sprintf("review comment %d %s", id, content))
	return nil, nil, f.err
}

func TestReact(t *testing.T) {
	for _, tt := range []struct {
		inReview bool
		want     string
	}{{false, "issue comment 5 eyes"}, {true, "review comment 5 eyes"}} {
		r := &fakeReactions{}
		if err := React(context.Background(), r, "o", "r", 5, tt.inReview); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.calls, []string{tt.want}) {
			t.Errorf("inReview=%v: calls %q, want %q", tt.inReview, r.calls, tt.want)
		}
	}
	if err := React(context.Background(), &fakeReactions{err: errors.New("boom")}, "o", "r", 5, false); errText(err) != "reacting: boom" {
		t.Errorf("React error %v", err)
	}
}

func TestIsStatus(t *testing.T) {
	wrapped := fmt.Errorf("doing it: %w", statusErr(http.StatusNotFound))
	if !IsStatus(wrapped, http.StatusNotFound) || IsStatus(wrapped, http.StatusUnprocessableEntity) {
		t.Error("IsStatus does not read the status through wrapping")
	}
	if IsStatus(errors.New("404"), http.StatusNotFound) || IsStatus(nil, http.StatusNotFound) || IsStatus(&github.ErrorResponse{}, 0) {
		t.Error("IsStatus says yes to an error that is not GitHub's answer")
	}
}

// fakeLabelMaker is a repository's labels by name, and the ones made.
type fakeLabelMaker struct {
	have      map[string]bool
	getErr    error // instead of 404 for a missing label
	createErr error
	created   []string
}

func (f *fakeLabelMaker) GetLabel(_ context.Context, _, _, name string) (*github.Label, *github.Response, error) {
	if f.getErr != nil {
		return nil, nil, f.getErr
	}
	if !f.have[name] {
		return nil, nil, statusErr(http.StatusNotFound)
	}
	return &github.Label{Name: github.String(name)}, nil, nil
}

func (f *fakeLabelMaker) CreateLabel(_ context.Context, _, _ string, l *github.Label) (*github.Label, *github.Response, error) {
	f.created = append(f.created, l.GetName()+" "+l.GetColor()+" "+l.GetDescription())
	return l, nil, f.createErr
}

func TestEnsureLabel(t *testing.T) {
	taken := &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusUnprocessableEntity}, Message: "Validation Failed",
		Errors: []github.Error{{Resource: "Label", Field: "name", Code: "already_exists"}}}
	invalid := &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusUnprocessableEntity}, Message: "Validation Failed",
		Errors: []github.Error{{Resource: "Label", Field: "color", Code: "invalid"}}}
	tests := []struct {
		name        string
		labels      fakeLabelMaker
		wantCreated []string
		wantErr     string
	}{
		{name: "exists: nothing made", labels: fakeLabelMaker{have: map[string]bool{"u": true}}},
		{name: "missing: made", wantCreated: []string{"u d93f0b Not verified"}},
		{name: "made meanwhile by someone else", labels: fakeLabelMaker{createErr: taken}, wantCreated: []string{"u d93f0b Not verified"}},
		{name: "refused otherwise", labels: fakeLabelMaker{createErr: invalid}, wantCreated: []string{"u d93f0b Not verified"},
			wantErr: "creating the u label: 422 Validation Failed [{Resource:Label Field:color Code:invalid Message:}]"},
		{name: "unreadable", labels: fakeLabelMaker{getErr: statusErr(http.StatusForbidden)}, wantErr: "reading the u label: 403 Forbidden []"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := EnsureLabel(context.Background(), &tt.labels, "o", "r", "u", "d93f0b", "Not verified")
			if errText(err) != tt.wantErr || !slices.Equal(tt.labels.created, tt.wantCreated) {
				t.Errorf("EnsureLabel: %q, made %q; want %q, %q", errText(err), tt.labels.created, tt.wantErr, tt.wantCreated)
			}
		})
	}
}
