package provider

import (
	"context"
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

// PoolFillOptions say how many pooled worktrees to keep ready, and at
// which base new ones are made.
type PoolFillOptions struct {
	Size int    // the pool's target: ready worktrees after the fill (default 1)
	Base string // revision new ones are detached at; default HEAD of the main worktree
}

// maxPoolSize bounds a fill: each pooled worktree is a full checkout.
const maxPoolSize = 64

// PoolFill makes pooled worktrees until Size are ready. Each is a linked
// worktree made by git (detached at Base, locked with majlis's reason, no
// hook run), whose claim is published first, exactly as a workspace's is.
// A failure undoes the worktree it was making and stops the fill; those
// made before it stay.
func (p *Provider) PoolFill(ctx context.Context, o PoolFillOptions) (*PoolResult, error) {
	if o.Size == 0 {
		o.Size = 1
	}
	if o.Size < 0 || o.Size > maxPoolSize {
		return nil, &Error{Op: "pool fill", Err: ErrInvalidArgument,
			Reason: fmt.Sprintf("a pool size is 0 to %d, not %d", maxPoolSize, o.Size)}
	}
	if o.Base == "" {
		o.Base = "HEAD"
	}
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	base, err := reader.ResolveCommit(ctx, o.Base)
	if err != nil {
		return nil, &Error{Op: "pool fill", Err: ErrUnknownBase, Reason: fmt.Sprintf("%q names no commit", o.Base),
			Hint: "name a branch, tag or commit that exists"}
	}
	res, err := p.PoolList()
	if err != nil {
		return nil, err
	}
	ready := 0
	for _, w := range res.Pool {
		if w.State == "ready" {
			ready++
		}
	}
	for ; ready < o.Size; ready++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p.progress(Progress{Op: "pool fill", Step: fmt.Sprintf("checking out %s into pooled worktree %d of %d", shortDigest(base), ready+1, o.Size)})
		rec, err := p.fillOne(ctx, base, o.Base)
		if err != nil {
			return nil, err
		}
		res.Created = append(res.Created, poolView(rec))
	}
	after, err := p.PoolList()
	if err != nil {
		return nil, err
	}
	res.Pool = after.Pool
	return res, nil
}

// fillOne publishes a pooled worktree's claim and makes the worktree.
func (p *Provider) fillOne(ctx context.Context, base, baseRef string) (*claimRecord, error) {
	id := newID()[:12]
	binding, path := poolBindingPrefix+id, p.poolPath(id)
	if err := os.MkdirAll(p.reg.WorkspaceRoot, 0o755); err != nil {
		return nil, &Error{Op: "pool fill", Path: p.reg.WorkspaceRoot, Err: err}
	}
	physical, err := pathid.Physical(path)
	if err != nil {
		return nil, &Error{Op: "pool fill", Path: path, Err: ErrInvalidArgument, Reason: err.Error()}
	}
	claim := Claim{Format: formatClaim2, Kind: ClaimKindPool, Binding: binding, RequestID: autoRequestPrefix + newID()[:16],
		Path: path, PhysicalPath: physical, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: base,
		BaseRef: baseRef, Detached: true, Intent: []string{}, CreatedAt: p.now().UTC()}
	if claim.Allocator, err = procid.Of(os.Getpid()); err != nil {
		return nil, err
	}
	cleared, err := p.checkWorktrees(ctx, AllocateOptions{Binding: binding}, path, physical)
	if err != nil {
		return nil, err
	}
	rec, err := p.publishClaim(ctx, claim, requestArgs{Op: "pool fill", Binding: binding, Base: base, Path: path}, cleared, p.prefetchIndex())
	if err != nil {
		return nil, err
	}
	if err := fpPoolClaimed.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	if err := p.makePooled(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// makePooled makes the worktree of a published pooled claim, pins its
// entry and publishes its created event. Any failure undoes the worktree.
func (p *Provider) makePooled(ctx context.Context, rec *claimRecord) error {
	c := rec.Claim
	if err := gitops.AddPoolWorktree(ctx, c.CommonDir, c.Path, c.Base, lockReason(rec)); err != nil {
		m := made{worktree: true}
		if errorsIsPathExists(err) {
			m = made{}
		}
		return p.undoAllocation(ctx, rec, err, m)
	}
	all := made{worktree: true}
	if err := fpPoolAdded.Inject(); err != nil {
		return p.undoAllocation(ctx, rec, err, all)
	}
	if err := pinEntry(rec); err != nil {
		return p.undoAllocation(ctx, rec, err, all)
	}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return p.undoAllocation(ctx, rec, err, all)
	}
	if entry, err := verifyRepository("pool fill", rec); err == nil {
		p.writePoolStamp(rec, entry)
	}
	if _, err := p.publishEvent(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return p.undoAllocation(ctx, rec, err, all)
	}
	return fpPoolCreated.Inject()
}
