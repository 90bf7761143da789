package server

import (
	"context"
	"time"
)

// DefaultPurgeInterval is how often the server purges the kept trash
// that is due (Options.PurgeInterval).
const DefaultPurgeInterval = time.Minute

// purgeLoop purges the repository's kept trash that is due
// (provider.PurgeDue: each salvaged first, oldest first), at once and
// then every interval, until ctx ends or the server stops. Nothing a
// request waits for runs here: reclaims return as soon as the workspace
// is in its trash folder, and the deletion happens in this loop's time.
func (s *srv) purgeLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for s.purgeOnce(ctx, every) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purgeOnce runs one purge of what is due as the server's work, as a
// request is run: admitted only while the server is not stopping, and
// counted in flight, so that a stop cancels it (it ends at its next safe
// point: before anything is deleted, or once a deletion it began is
// finished and recorded) and waits for it before it releases the
// server lease. It returns false once the server is stopping.
func (s *srv) purgeOnce(bctx context.Context, every time.Duration) bool {
	if !s.enter() {
		return false
	}
	defer s.inflight.Done()
	ctx, cancel := s.workContext(bctx)
	defer cancel()
	res, err := s.p.PurgeDue(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.o.Logf("purging the kept trash that is due failed (retrying in %s): %v", every, err)
	case err != nil:
		s.o.Logf("the purge of the kept trash stopped with the server: %v", err)
	}
	if res != nil {
		for _, t := range res.Purged {
			if t.Recycled != "" {
				s.o.Logf("recycled the kept trash %s of %s into the warm pool as %s (%s)", t.Path, t.Binding, t.Recycled, t.Due)
				continue
			}
			s.o.Logf("purged the kept trash %s of %s (%s)", t.Path, t.Binding, t.Due)
		}
		for _, t := range res.Left {
			s.o.Logf("left the kept trash %s of %s, due (%s): %s", t.Path, t.Binding, t.Due, t.Reason)
		}
		for _, w := range res.PoolDrained {
			s.o.Logf("gave back the pooled worktree %s for space, before any kept trash", w.Path)
		}
	}
	return true
}
