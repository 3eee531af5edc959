package channel

import (
	"testing"
	"time"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/contract/channelrefusaltest"
)

// The app's channel answers every route's refusals as
// contract.ChannelRefusals says, as `inspect run`'s does (decision 0046).
func TestChannelRefusesAsTheTableSays(t *testing.T) {
	const id = "att-refusals"
	channelrefusaltest.Run(t, channelrefusaltest.Backend{
		New: func(t *testing.T, kind contract.AttemptKind) (channelrefusaltest.Attempt, bool) {
			r := newRig(t, Options{Providers: providers{}})
			a := r.st.attempts[sessionAttempt]
			if kind == contract.KindSnapshot {
				a = r.st.attempts[snapshotAttempt]
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
