package gather

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/policy"
)

// The worker's listing counts failures by the one rule
// (policy.CountsAsFailure, decision 0047), as the webhooks do: our own
// check run (by id or slug) and a status our bot posted never count, nor
// a passing or pending one; then the repo config's patterns choose.
func TestListFailingChecksAsksTheOneRule(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/o/r/commits/abc/check-runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, map[string]any{"total_count": 5, "check_runs": []map[string]any{
			{"id": 1, "name": "unit", "conclusion": "failure", "app": map[string]any{"id": 7, "slug": "ci"}},
			{"id": 2, "name": "lint", "conclusion": "timed_out", "app": map[string]any{"id": 8, "slug": "github-actions"}},
			{"id": 3, "name": "Inspect", "conclusion": "failure", "app": map[string]any{"id": 42, "slug": "renamed"}},
			{"id": 4, "name": "Inspect again", "conclusion": "failure", "app": map[string]any{"id": 9, "slug": "inspect"}},
			{"id": 5, "name": "docs", "conclusion": "success", "app": map[string]any{"id": 7, "slug": "ci"}},
		}})
	})
	mux.HandleFunc("GET /repos/o/r/commits/abc/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, map[string]any{"state": "failure", "statuses": []map[string]any{
			{"context": "jenkins", "state": "failure", "creator": map[string]any{"login": "jenkins", "type": "User"}},
			{"context": "travis", "state": "error"},
			{"context": "ours", "state": "failure", "creator": map[string]any{"login": "inspect[bot]", "type": "Bot"}},
			{"context": "pending", "state": "pending"},
		}})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := github.NewClient(srv.Client())
	base, err := url.Parse(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = base

	cfg := config.Repo{}
	cfg.Repair.Enabled = true
	cfg.Repair.Checks = []string{"*"}
	got, err := ListFailingChecks(context.Background(), c, "o", "r", "abc", cfg, policy.AppIdentity{ID: 42, Slug: "inspect"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ch := range got {
		names = append(names, ch.Name)
	}
	if want := []string{"unit", "lint", "jenkins", "travis"}; !slices.Equal(names, want) {
		t.Errorf("failing checks %q, want %q", names, want)
	}
}

func writeJSON(t *testing.T, w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Error(err)
	}
}
