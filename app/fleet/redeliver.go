package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/rs/zerolog"
)

// GitHub does not retry a failed webhook delivery by itself: a delivery we
// answered 5xx (the store was down, we shed load) or never answered (the
// replica died) stays failed unless someone asks for it again. The sweep
// asks. Accept deduplicates by delivery GUID, which a redelivery keeps, so
// asking twice is harmless; asking for one GitHub counts as delivered
// never happens. GitHub counts a status of 200–399 as success (its
// deliveries' status filter), so a redirect we answered is delivered too.

// delivered tells whether GitHub counts a delivery answered with code as
// a success: "success" in its status filter is 200–399, "failure" 400–599.
func delivered(code int) bool { return code >= 200 && code < 400 }

// maxSweepPages bounds one sweep: 100 deliveries a page.
const maxSweepPages = 50

// deliveryGroup is what the sweep knows of one GUID from GitHub's list.
type deliveryGroup struct {
	guid string
	// succeeded: some attempt got a 200–399 (delivered, as GitHub counts
	// it). Such a GUID is never redelivered, even when we ignored it on
	// purpose.
	succeeded bool
	// latest is the newest attempt's id, the one to redeliver.
	latest   int64
	latestAt time.Time
	event    string
}

// SweepDeliveries runs the redelivery sweep once, now, whatever the
// fleet's schedule (the periodic loop runs it once per
// github.redelivery.interval across the fleet; tests and an operator
// recovering after an outage run it at will). It lists the App's
// deliveries of the last github.redelivery.window (newest first,
// cursor-paged), groups them by GUID, and asks GitHub once per sweep to
// redeliver each GUID none of whose attempts was delivered (200–399), up to
// github.redelivery.max_per_guid times per GUID. It returns how many
// redeliveries it asked for.
func (f *Fleet) SweepDeliveries(ctx context.Context) (int, error) {
	cfg := f.redelivery
	log := zerolog.Ctx(ctx)
	c, err := f.gh.App(ctx)
	if err != nil {
		return 0, err
	}
	now := f.clock.Now()
	since := now.Add(-cfg.Window)
	groups, order, err := listDeliveryGroups(ctx, c, since)
	if err != nil {
		return 0, err
	}
	asked := 0
	for _, guid := range order {
		g := groups[guid]
		if g.succeeded {
			continue
		}
		glog := log.With().Str("delivery_id", guid).Str("event", g.event).Logger()
		// Accepted after all (GitHub timed out waiting for a 2xx that was
		// written): nothing to recover.
		known, err := f.store.DeliveryKnown(ctx, guid)
		if err != nil {
			return asked, err
		}
		if known {
			continue
		}
		n, err := f.store.Redeliveries(ctx, guid)
		if err != nil {
			return asked, err
		}
		if n >= cfg.MaxPerGUID {
			glog.Debug().Int("asked", n).Msg("delivery still failing; redelivery cap reached")
			continue
		}
		_, _, err = c.Apps.RedeliverHookDelivery(ctx, g.latest)
		var accepted *github.AcceptedError
		switch wait, refused := f.classify(err, now); {
		case err == nil || errors.As(err, &accepted):
			glog.Info().Int64("attempt_id", g.latest).Int("asked_before", n).Msg("redelivery asked for")
			asked++
		case refused:
			// Refused (too old, gone): counted, so a GUID GitHub will
			// not redeliver is not asked for every sweep; the others go on.
			glog.Warn().Err(err).Int64("attempt_id", g.latest).Msg("redelivery refused")
		case wait > 0 || ctx.Err() != nil:
			// The App's write budget is spent, or we are stopping: the
			// rest wait for the next sweep, their caps untouched.
			return asked, fmt.Errorf("redelivering %s: %w", guid, err)
		default:
			// A transient failure (network, 5xx) costs no cap either.
			glog.Warn().Err(err).Int64("attempt_id", g.latest).Msg("redelivery failed; next sweep tries again")
			continue
		}
		// Counted once GitHub has answered. A crash between the answer and
		// this write asks once more than the cap, at most.
		if err := f.store.RecordRedelivery(ctx, guid, now); err != nil {
			return asked, err
		}
	}
	if err := f.store.PruneRedeliveries(ctx, now.Add(-2*cfg.Window)); err != nil {
		log.Warn().Err(err).Msg("pruning redelivery counts failed")
	}
	return asked, nil
}

// listDeliveryGroups pages through GET /app/hook/deliveries, newest first,
// until the deliveries are older than since.
func listDeliveryGroups(ctx context.Context, c *github.Client, since time.Time) (map[string]*deliveryGroup, []string, error) {
	groups := map[string]*deliveryGroup{}
	var order []string // oldest GUIDs last, as listed; kept for stable logs
	opts := &github.ListCursorOptions{PerPage: 100}
	for range maxSweepPages {
		page, resp, err := c.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("listing webhook deliveries (GET /app/hook/deliveries): %w", err)
		}
		old := false
		for _, d := range page {
			at := d.GetDeliveredAt().Time
			if at.Before(since) {
				old = true
				continue
			}
			g := groups[d.GetGUID()]
			if g == nil {
				g = &deliveryGroup{guid: d.GetGUID(), event: d.GetEvent()}
				groups[g.guid] = g
				order = append(order, g.guid)
			}
			if delivered(d.GetStatusCode()) {
				g.succeeded = true
			}
			if g.latest == 0 || at.After(g.latestAt) {
				g.latest, g.latestAt = d.GetID(), at
			}
		}
		if old || resp.Cursor == "" {
			return groups, order, nil
		}
		opts.Cursor = resp.Cursor
	}
	return groups, order, nil
}
