package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

// purgeBegin salvages the kept trash of r (a folder, or git's entry
// kept aside: entry), decides whether it is recycled into the pool, and
// publishes the purging event: from then on the trash may be half
// deleted or in the pool. It returns the pooled worktree's binding when
// the trash is recycled ("" when it is deleted).
func (p *Provider) purgeBegin(ctx context.Context, r *claimRecord, path string, entry bool, pt *PurgedTrash, lease *reservation.Session) (string, error) {
	var err error
	if entry {
		pt.SalvageRef, err = p.purgeSalvageEntry(ctx, r, path)
	} else {
		pt.SalvageRef, err = p.purgeSalvage(ctx, r)
	}
	if err != nil {
		return "", err
	}
	if err := p.inject(ctx, fpPurgeSalvaged); err != nil {
		return "", err
	}
	if err := lease.Check(); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err // stopped (a server's stop, Ctrl-C): the last safe point before deleting
	}
	purging := Event{Kind: EventPurging, TrashPath: path, SalvageRef: pt.SalvageRef, Reason: pt.Due}
	if id, err := pathid.Lstat(path); entry && err == nil {
		// An entry half deleted may have lost its pin: the deletion
		// that finishes it goes by this identity.
		purging.Dev, purging.Ino = id.Dev, id.Ino
	}
	var pool *claimRecord
	if !entry {
		if pool = p.recycleClaim(ctx, r, pt.Due); pool != nil {
			purging.Taker = pool.Claim.Binding
			if err := p.inject(ctx, fpRecycleClaimed); err != nil {
				p.retirePooled(pool, "recycling stopped: "+err.Error())
				return "", err
			}
		}
	}
	if _, err := p.records.Publish(r, purging); err != nil {
		if pool != nil {
			p.retirePooled(pool, "recycling stopped: "+err.Error())
		}
		return "", err
	}
	return purging.Taker, nil
}

// retirePooled retires the claim of a pooled worktree that was never
// made (its failed event).
func (p *Provider) retirePooled(pool *claimRecord, why string) {
	if _, err := p.records.Publish(pool, Event{Kind: EventFailed, Reason: why}); err != nil {
		p.log.Warn("retiring a pooled claim failed (pool drain retires it)", "binding", pool.Claim.Binding, "error", err)
	}
	p.dropPoolStamp(pool.Claim.Binding)
}

// purgeRecycled finishes the purge of the kept trash of r that its
// purging event gave to the pooled worktree named binding: the
// recycling, when this purge began it (fresh) and it has not finished;
// else, unless the pooled worktree is ready already, the deletion of the
// folder wherever it is (it is salvaged) and of what the recycling made.
// pt.Recycled names the pooled worktree when the trash went into the pool.
func (p *Provider) purgeRecycled(ctx context.Context, r *claimRecord, binding string, pt *PurgedTrash, fresh bool, lease *reservation.Session) error {
	pool, err := p.claimOf(binding, 1)
	if err != nil {
		return err
	}
	if fresh && !pool.has(EventCreated) && !pool.has(EventFailed) {
		err := p.recycle(ctx, r, pool, pt.SalvageRef, lease)
		if err == nil {
			pt.Recycled = binding
			return nil
		}
		p.log.Warn("recycling the kept trash into the pool failed; it is deleted instead", "binding", r.Claim.Binding,
			"pool", binding, "error", err)
		if pool, err = p.claimOf(binding, 1); err != nil {
			return err
		}
	}
	if pool.has(EventCreated) { // ready (or taken since): the recycling finished
		pt.Recycled = binding
		return nil
	}
	return p.recycleUndo(ctx, r, pool)
}

// recycleUndo deletes the folder of the kept trash of r (salvaged before
// the recycling began), wherever it is: in the pool's folder, where a
// drain that looked at the unfinished pooled worktree moves it aside, or
// still in its trash folder; then git's old entry of it and the fresh one
// the recycling made, and it retires the pooled claim.
func (p *Provider) recycleUndo(ctx context.Context, r, pool *claimRecord) error {
	c := pool.Claim
	for _, at := range []string{c.Path, drainAsidePath(&c)} {
		if err := durable.DeleteTree(at, createdIdentity(r)); err != nil {
			return &Error{Op: "purge", Binding: r.Claim.Binding, Path: at, Err: ErrTrash,
				Reason: "deleting the kept trash folder, renamed into the pool's folder: " + err.Error(),
				Hint:   "its work is salvaged; the next purge finishes the deletion", Details: map[string]any{"resumable": true}}
		}
	}
	if err := p.purgeDelete(ctx, r, r.Events[EventMoved].TrashPath, false); err != nil {
		return err
	}
	if err := p.dropRecycledEntry(pool); err != nil {
		return &Error{Op: "purge", Binding: r.Claim.Binding, Path: gitops.PoolEntryDir(c.CommonDir, c.Path), Err: ErrTrash,
			Reason: "deleting git's entry made for the pool: " + err.Error(),
			Hint:   "its work is salvaged; the next purge finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	if poolState(pool) != "" {
		p.retirePooled(pool, "the recycling of the kept trash of "+r.Claim.Binding+" did not finish: deleted")
	}
	return nil
}

// dropRecycledEntry deletes git's entry a recycling made for the pooled
// worktree of pool (only when it carries the pooled claim's pin), and
// what is left of it in the state folder.
func (p *Provider) dropRecycledEntry(pool *claimRecord) error {
	c := pool.Claim
	stage := p.recycleStage(pool)
	if id, err := pathid.Lstat(stage); err == nil {
		if err := durable.DeleteTree(stage, durable.DirIdentity{Dev: id.Dev, Ino: id.Ino}); err != nil {
			return err
		}
	}
	admin, aside := gitops.PoolEntryDir(c.CommonDir, c.Path), p.adminAside(&c)
	if _, err := os.Lstat(admin); err == nil {
		if pin, err := gitops.ReadEntryPin(admin); err != nil || pin != pool.Digest {
			p.log.Warn("git's entry named as the pooled worktree's is not its own; left", "entry", admin)
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(aside), 0o700); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	p.dropPoolStamp(c.Binding)
	return gitops.DropWorktreeEntry(admin, aside)
}
