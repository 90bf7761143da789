package provider

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// lockPoolFill takes the repository's fill lock (a file lock in the
// state folder, held by one fill at a time across processes: `pool
// fill`, the server's background fill) and returns its release. A fill
// counts the ready pooled worktrees under it, so that two fills started
// together make the pool's size, not twice it.
func (p *Provider) lockPoolFill(ctx context.Context) (func(), error) {
	dir := filepath.Join(p.stateDir, "pool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &Error{Op: "pool fill", Path: dir, Err: err}
	}
	fl := flock.New(filepath.Join(dir, "fill.lock"))
	if ok, err := fl.TryLock(); err != nil {
		return nil, &Error{Op: "pool fill", Path: fl.Path(), Err: err}
	} else if ok {
		return func() { _ = fl.Unlock() }, nil
	}
	// The lock is released by the kernel when its holder dies: waiting
	// for it ends when that fill ends, however it ends.
	p.progress(Progress{Op: "pool fill", Step: "waiting for another pool fill (the server's, or another command's) to finish"})
	if _, err := fl.TryLockContext(ctx, 25*time.Millisecond); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // stopped while waiting (Ctrl-C, the server's stop)
		}
		return nil, &Error{Op: "pool fill", Path: fl.Path(), Err: err}
	}
	return func() { _ = fl.Unlock() }, nil
}
