package handlers_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/inspecthq/inspect/handlers"
)

type forgetter struct {
	ids []int64
	err error
}

func (f *forgetter) ForgetUser(_ context.Context, id int64) error {
	f.ids = append(f.ids, id)
	return f.err
}

// The revoked payload (octokit's fixture) forgets its sender; another
// action forgets nobody; a payload without a sender is a payload error; a
// store that fails is a store error (GitHub retries nothing, but the
// delivery's 5xx shows in its log and the redelivery sweep brings it back).
func TestAppAuthorizationRevokedForgetsTheUser(t *testing.T) {
	revoked, err := os.ReadFile("../testdata/github-webhooks/github_app_authorization.revoked.json")
	if err != nil {
		t.Fatal(err)
	}
	f := &forgetter{}
	h := &handlers.AppAuthorization{Forget: f}
	if err := h.Handle(context.Background(), "github_app_authorization", "d1", revoked); err != nil || len(f.ids) != 1 || f.ids[0] != 1 {
		t.Fatalf("revoked: %v, forgot %v; want octocat (1)", err, f.ids)
	}
	if err := h.Handle(context.Background(), "github_app_authorization", "d2", []byte(`{"action":"other","sender":{"id":2}}`)); err != nil || len(f.ids) != 1 {
		t.Errorf("another action: %v, forgot %v", err, f.ids)
	}
	var pe *handlers.PayloadError
	if err := h.Handle(context.Background(), "github_app_authorization", "d3", []byte(`{"action":"revoked"}`)); !errors.As(err, &pe) {
		t.Errorf("no sender: %v, want a payload error", err)
	}
	f.err = errors.New("database down")
	var se *handlers.StoreError
	if err := h.Handle(context.Background(), "github_app_authorization", "d4", revoked); !errors.As(err, &se) {
		t.Errorf("a failing store: %v, want a store error", err)
	}
}
