package checkoutrun

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/contract/channelrefusaltest"
)

// `inspect run`'s channel answers every route's refusals as
// contract.ChannelRefusals says, as the app's does (decision 0046). It
// runs one session: a snapshot build's routes are refused for the kind,
// and it serves no artifacts.
func TestChannelRefusesAsTheTableSays(t *testing.T) {
	repo, sha := newRepo(t, map[string]string{"a.txt": "a\n"})
	for _, tc := range []struct {
		name     string
		egress   Egress
		unserved []string
	}{
		// Nobody can message a session run from the shell: no turns.
		{"with egress", Egress{Model: teapot, Registry: teapot}, []string{contract.RouteArtifact, contract.RouteTurns, contract.RouteAgentState}},
		// Without a server config there is no model and no registry.
		{"without egress", Egress{}, []string{contract.RouteArtifact, contract.RouteTurns, contract.RouteAgentState, contract.PathEgressModel, contract.PathEgressRegistry}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			channelrefusaltest.Run(t, channelrefusaltest.Backend{
				New: func(t *testing.T, kind contract.AttemptKind) (channelrefusaltest.Attempt, bool) {
					if kind != contract.KindSession {
						return channelrefusaltest.Attempt{}, false
					}
					srv, spec := testServer(t, repo, sha, io.Discard, tc.egress)
					return channelrefusaltest.Attempt{
						Channel: srv.http.Handler, ID: spec.AttemptID, ClaimCode: srv.claimCode,
						// Its attempt ends, as the app's, when its result is kept.
						End: func() {
							srv.mu.Lock()
							srv.result = &contract.ResultUpload{}
							srv.mu.Unlock()
						},
						// Called between requests, which the test serves itself.
						Expire: func() { srv.now = func() time.Time { return srv.expiry().Add(time.Second) } },
					}, true
				},
				Unserved: tc.unserved,
			})
		})
	}
}

// `inspect snapshot build`'s channel, one snapshot build's attempt, is
// held to the same table: a session's routes are refused for the kind, and
// of the rest it serves the claim and the registry egress alone (the build
// clones the checkout itself, and keeps its result).
func TestSnapshotBuildChannelRefusesAsTheTableSays(t *testing.T) {
	snapshotOnly := []string{contract.RouteRepoToken, contract.RouteSnapshotJob, contract.RouteSnapshotResult}
	for _, tc := range []struct {
		name     string
		egress   Egress
		unserved []string
	}{
		// A model is never a snapshot build's: the kind refuses it first.
		{"with egress", Egress{Model: teapot, Registry: teapot}, snapshotOnly},
		{"without egress", Egress{}, append(slices.Clone(snapshotOnly), contract.PathEgressRegistry)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			channelrefusaltest.Run(t, channelrefusaltest.Backend{
				New: func(t *testing.T, kind contract.AttemptKind) (channelrefusaltest.Attempt, bool) {
					if kind != contract.KindSnapshot {
						return channelrefusaltest.Attempt{}, false
					}
					srv, err := startSnapshotServer(tc.egress, nil, time.Now().Add(time.Hour))
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(srv.close)
					return channelrefusaltest.Attempt{
						Channel: srv.http.Handler, ID: srv.spec.AttemptID, ClaimCode: srv.claimCode,
						End: func() {
							srv.mu.Lock()
							srv.result = &contract.ResultUpload{}
							srv.mu.Unlock()
						},
						Expire: func() { srv.now = func() time.Time { return srv.expiry().Add(time.Second) } },
					}, true
				},
				Unserved: tc.unserved,
			})
		})
	}
}

// teapot is an egress handler that answers and does nothing else.
func teapot(w http.ResponseWriter, _ *http.Request, _ contract.Spec) {
	w.WriteHeader(http.StatusTeapot)
}
