package channel

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/contract/channelrefusaltest"
	"github.com/inspecthq/inspect/internal/storetest"
)

// The app's channel answers every route's refusals as
// contract.ChannelRefusals says, as `inspect run`'s does (decision 0046).
func TestChannelRefusesAsTheTableSays(t *testing.T) {
	const id = "att-refusals"
	channelrefusaltest.Run(t, channelrefusaltest.Backend{
		New: func(t *testing.T, kind contract.AttemptKind) (channelrefusaltest.Attempt, bool) {
			r := newRig(t, Options{Providers: providers{}})
			a := r.st.attempts[sessionAttempt]
			switch kind {
			case contract.KindSnapshot:
				a = r.st.attempts[snapshotAttempt]
			case contract.KindBaseline:
				a = r.st.attempts[baselineAttempt]
				b := r.st.baselines[baselineAttempt]
				b.AttemptID = id
				r.st.baselines[id] = b
			}
			a.ID, a.State = id, store.AttemptStarted
			r.st.attempts[id] = a
			r.st.claims[id] = "claim-code-refusals-0123"
			return channelrefusaltest.Attempt{
				Channel: r.mux, ID: id, ClaimCode: r.st.claims[id],
				End: func() {
					a := r.st.attempts[id]
					a.State = store.AttemptEnded
					r.st.attempts[id] = a
				},
				Expire: func() { r.clock.now = a.Deadline.Add(sessionTokenTTLGrace + time.Second) },
			}, true
		},
	})
}

// The same over the app's store (SQLite): its claims, tokens and ends.
func TestChannelOverTheStoreRefusesAsTheTableSays(t *testing.T) {
	spec := mustJSON(t, contract.Spec{Agent: contract.Agent{Model: "m-1", Provider: "p"}})
	n := 0
	channelrefusaltest.Run(t, channelrefusaltest.Backend{
		New: func(t *testing.T, kind contract.AttemptKind) (channelrefusaltest.Attempt, bool) {
			ctx := context.Background()
			// Already migrated: the table's few hundred cases would
			// otherwise spend a minute under -race migrating stores.
			st, err := store.Open(ctx, "sqlite", storetest.MigratedDSN(t, "sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() }) // a test's store; its errors say nothing of the channel
			n++
			a := store.Attempt{ID: fmt.Sprintf("att-store-%d", n), SessionID: "s1", Kind: string(kind), Deadline: epoch.Add(time.Hour), Spec: spec}
			switch kind {
			case contract.KindSnapshot:
				a.SessionID, a.RepoID, a.Spec = "", 7, `{"sha":"`+jobSHA+`"}`
			case contract.KindBaseline:
				a.SessionID, a.RepoID = "", 7
			}
			const code = "claim-code-store-0123456789"
			if err := st.CreateAttempt(ctx, a, code, epoch); err != nil {
				t.Fatal(err)
			}
			clock := &fixedClock{now: epoch}
			mux := http.NewServeMux()
			// The claim is the store's own; the rest of the engine's
			// parts are fakeEngine's.
			o := Options{Store: st, Clock: clock, Logger: zerolog.Nop(), Providers: providers{}}
			engineParts(&o, &fakeEngine{})
			o.Claim = func(ctx context.Context, id, code, token string) (store.Attempt, error) {
				return st.ClaimAttempt(ctx, id, code, token, clock.Now())
			}
			New(o).Routes(mux)
			return channelrefusaltest.Attempt{
				Channel: mux, ID: a.ID, ClaimCode: code,
				End: func() {
					if err := st.EndAttempt(ctx, a.ID, clock.Now()); err != nil {
						t.Fatal(err)
					}
				},
				Expire: func() { clock.now = a.Deadline.Add(sessionTokenTTLGrace + time.Second) },
			}, true
		},
	})
}
