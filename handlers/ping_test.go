package handlers_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/inspecthq/inspect/handlers"
)

func TestPingHandles(t *testing.T) {
	if got := (handlers.Ping{}).Handles(); !slices.Equal(got, []string{"ping"}) {
		t.Errorf("Handles() = %q, want [ping]", got)
	}
}

func TestPing(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("..", "testdata", "github-webhooks", "ping.with-app_id.json"))
	if err != nil {
		t.Fatal(err)
	}
	// A ping only needs a 200: whatever the body, Handle succeeds.
	tests := []struct {
		name     string
		delivery string
		payload  []byte
	}{
		{"fixture", testDelivery, fixture},
		{"empty body", testDelivery, []byte{}},
		{"nil body", testDelivery, nil},
		{"not JSON", testDelivery, []byte("zen")},
		{"no delivery id", "", fixture},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := (handlers.Ping{}).Handle(testContext(), "ping", tc.delivery, tc.payload); err != nil {
				t.Errorf("Handle: %v, want nil", err)
			}
		})
	}
}
