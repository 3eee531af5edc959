package app

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/inspecthq/inspect/app/store"
	"github.com/inspecthq/inspect/config"
	"github.com/inspecthq/inspect/images"
	"github.com/inspecthq/inspect/runner/contract"
)

// snapshotStore is the configured snapshot store, opened on first use.
type snapshotStore struct {
	once  sync.Once
	name  string // as the spec names it: a layout's path made absolute
	store images.Store
	err   error
}

func (s *Service) snapshots() (images.Store, string, error) {
	if s.cfg.Snapshots.Store == "" {
		return nil, "", nil
	}
	s.snapStore.once.Do(func() {
		name := s.cfg.Snapshots.Store
		if dir, ok := strings.CutPrefix(name, images.LayoutPrefix); ok && !filepath.IsAbs(dir) {
			// config.Load makes it absolute; a Service built from
			// config.Defaults() (tests, the demo) gets the same here.
			abs, err := filepath.Abs(dir)
			if err != nil {
				s.snapStore.err = err
				return
			}
			name = images.LayoutPrefix + abs
		}
		s.snapStore.name = name
		s.snapStore.store, s.snapStore.err = images.OpenStore(name)
	})
	return s.snapStore.store, s.snapStore.name, s.snapStore.err
}

// pinSnapshot resolves the repo's newest snapshot and pins its digest for
// the spec, with what the supervisor needs to catch it up. nil means a cold
// clone: snapshots are off, the repo asks for none, it has none yet, or the
// store cannot be read (a snapshot only makes a session faster, so its
// absence never stops one; it is logged).
func (s *Service) pinSnapshot(ctx context.Context, sess store.Session, cfg config.Repo, timeout time.Duration) *contract.Snapshot {
	if !cfg.WantsSnapshots() {
		return nil
	}
	st, storeName, err := s.snapshots()
	if st == nil || err != nil {
		if err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("snapshot store unavailable; cold clone")
		}
		return nil
	}
	snap, err := st.Latest(ctx, sess.FullName())
	if errors.Is(err, images.ErrNoSnapshot) {
		return nil
	}
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("resolving the newest snapshot failed; cold clone")
		return nil
	}
	return &contract.Snapshot{
		Store:  storeName,
		Digest: snap.Digest.String(),
		Caches: cfg.SnapshotCaches(),
		Setup:  cfg.SnapshotSetupCommands(s.cfg.Sessions.CommandTimeout, timeout),
	}
}
