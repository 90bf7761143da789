package server

import (
	"context"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// DefaultPoolInterval is how often the server tops the warm pool up to
// the policy's pool.size (Options.PoolInterval).
const DefaultPoolInterval = 30 * time.Second

// poolLoop keeps the repository's warm pool at pool.size ready pooled
// worktrees (provider.PoolFill), at once and then every interval, until
// ctx ends or the server stops. An allocation never waits for it: it
// takes a pooled worktree that is ready, or makes its own with git.
func (s *srv) poolLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last string // the last failure logged: a refusal that stands (a base with submodules) is logged once
	for s.poolOnce(ctx, every, &last) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poolOnce runs one fill as the server's work, as purgeOnce runs a purge:
// admitted only while the server is not stopping and counted in flight,
// so that a stop cancels it (a fill stops between worktrees) and waits for
// it before it releases the server lease. It returns false once the
// server is stopping. A failure is logged unless it is the one logged
// last (*last): a fill refused for good (the base has submodules) says
// so once, not every interval; so does a fill stopped by the disk space
// the policy gives the pool (pool.max_bytes, trash.max_bytes,
// trash.min_free).
func (s *srv) poolOnce(bctx context.Context, every time.Duration, last *string) bool {
	if !s.enter() {
		return false
	}
	defer s.inflight.Done()
	ctx, cancel := s.workContext(bctx)
	defer cancel()
	size, _, err := s.p.PoolSize()
	if err != nil {
		s.o.Logf("reading pool.size failed (retrying in %s): %v", every, err)
		return true
	}
	if size == 0 {
		return true
	}
	res, err := s.p.PoolFill(ctx, poolFillOptions(size))
	switch {
	case err != nil && ctx.Err() == nil:
		if msg := err.Error(); msg != *last {
			*last = msg
			s.o.Logf("filling the warm pool failed (retrying in %s): %v", every, err)
		}
	case err != nil:
		s.o.Logf("the pool fill stopped with the server: %v", err)
	}
	switch {
	case err == nil && res.Stopped != nil:
		// The disk space the policy gives the pool is used up: said once,
		// until the fill gets past it or stops for another bound.
		if msg := "stopped: " + res.Stopped.Reason; msg != *last {
			*last = msg
			s.o.Logf("the warm pool stays below pool.size (%d): %s", size, res.Stopped.Message)
		}
	case err == nil:
		*last = ""
	}
	if res != nil {
		for _, w := range res.Created {
			s.o.Logf("made pooled worktree %s", w.Path)
		}
	}
	return true
}

func poolFillOptions(size int) provider.PoolFillOptions {
	return provider.PoolFillOptions{Size: size, Settle: true}
}
