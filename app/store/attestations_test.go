package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/inspecthq/inspect/app/store"
)

// An attempt's attestation is kept once: a replay's second put keeps the
// first, and an attempt without one has none.
func TestAttestationIsKeptOnce(t *testing.T) {
	forEachDriver(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.GetAttestation(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("before: %v", err)
		}
		first := store.Attestation{AttemptID: "a1", SessionID: "s", KeyID: "k2", Envelope: `{"payloadType":"application/vnd.in-toto+json"}`, CreatedAt: t0}
		if err := s.PutAttestation(ctx, first); err != nil {
			t.Fatal(err)
		}
		again := first
		again.KeyID, again.Envelope = "k3", `{}`
		if err := s.PutAttestation(ctx, again); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetAttestation(ctx, "a1")
		if err != nil || got.KeyID != "k2" || got.Envelope != first.Envelope || got.SessionID != "s" || !got.CreatedAt.Equal(t0) {
			t.Fatalf("got %+v, %v; want the first", got, err)
		}
	})
}
