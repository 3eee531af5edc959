package checkoutrun

import (
	"context"
	"time"

	"github.com/inspecthq/inspect/contract"
	"github.com/inspecthq/inspect/runner/supervisor"
)

// snapshotChannelLifetime is how long the channel of a build with no
// deadline of its own accepts its token.
const snapshotChannelLifetime = 24 * time.Hour

// BuildSnapshot is `inspect snapshot build`'s engine: the snapshot build b
// of a local checkout, its setup reaching b.Registries through egress's
// registry handler (the server's registry egress, for this one build) as
// a snapshot job's setup reaches the app's. It plays the app's part for
// one snapshot attempt, on loopback only and for as long as the build
// lasts: the claim, with a random single-use code, and the registry
// egress behind the session token (see server). Nothing else is served:
// b clones the checkout itself, and its result stays in this process.
func BuildSnapshot(ctx context.Context, b supervisor.SnapshotBuild, egress Egress) (supervisor.SnapshotResult, error) {
	srv, err := newServer("", "", nil, Egress{Registry: egress.Registry})
	if err != nil {
		return supervisor.SnapshotResult{}, err
	}
	defer srv.close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(snapshotChannelLifetime)
	}
	srv.kind = contract.KindSnapshot
	srv.start(contract.Spec{AttemptID: randomID(), Registries: b.Registries, Limits: contract.Limits{Deadline: deadline}})
	res, err := supervisor.BuildSnapshotOverChannel(ctx, b, srv.URL(), srv.spec.AttemptID, srv.claimCode)
	for _, f := range srv.protocolFaults() {
		b.Log.Warn().Str("refused", f).Msg("the snapshot build's channel refused a request")
	}
	return res, err
}
