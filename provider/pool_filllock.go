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
	// The lock is released by the kernel when its holder dies: waiting
	// for it ends when that fill ends, however it ends.
	if _, err := fl.TryLockContext(ctx, 25*time.Millisecond); err != nil {
		return nil, &Error{Op: "pool fill", Path: fl.Path(), Err: err}
	}
	return func() { _ = fl.Unlock() }, nil
}
