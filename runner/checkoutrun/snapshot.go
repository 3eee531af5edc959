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
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(snapshotChannelLifetime)
	}
	srv, err := startSnapshotServer(egress, b.Registries, deadline)
	if err != nil {
		return supervisor.SnapshotResult{}, err
	}
	defer srv.close()
	res, err := supervisor.BuildSnapshotOverChannel(ctx, b, srv.URL(), srv.spec.AttemptID, srv.claimCode)
	for _, f := range srv.protocolFaults() {
		b.Log.Warn().Str("refused", f).Msg("the snapshot build's channel refused a request")
	}
	return res, err
}

// startSnapshotServer serves one snapshot build's attempt, whose setup may
// reach registries through egress's registry handler until deadline (and
// the margin expiry gives). Its spec carries only what the server reads:
// the attempt's id, the registries and the deadline.
func startSnapshotServer(egress Egress, registries []contract.Registry, deadline time.Time) (*server, error) {
	srv, err := newServer("", "", nil, Egress{Registry: egress.Registry})
	if err != nil {
		return nil, err
	}
	srv.kind = contract.KindSnapshot
	srv.start(contract.Spec{AttemptID: randomID(), Registries: registries, Limits: contract.Limits{Deadline: deadline}})
	return srv, nil
}
