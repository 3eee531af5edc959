package channel

import (
	"context"
	"encoding/json"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/contract"
)

// Turns hands the supervisor the session's turns after after, and records
// those up to after as delivered to this attempt (decision 0071). They
// come from the store, which every replica writes, so the replica serving
// the supervisor sees a turn whichever replica admitted it.
func (c *Channel) Turns(ctx context.Context, a store.Attempt, after int) ([]contract.Turn, error) {
	if after > 0 {
		if err := c.store.DeliverTurns(ctx, a.SessionID, a.ID, after, c.clock.Now()); err != nil {
			return nil, err
		}
	}
	turns, err := c.store.TurnsAfter(ctx, a.SessionID, after)
	if err != nil {
		return nil, err
	}
	out := make([]contract.Turn, 0, len(turns))
	for _, t := range turns {
		out = append(out, contract.Turn{Seq: t.Seq, Author: t.AuthorLogin, Message: t.Message, Stop: t.Stop})
	}
	return out, nil
}

// Recorder keeps the running agent's flight recorder (the newest) for the
// session's page, as JSON: any replica serves the page from it.
func (c *Channel) Recorder(ctx context.Context, a store.Attempt, rec contract.Recorder) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return c.store.SetRecorder(ctx, a.ID, string(b))
}
