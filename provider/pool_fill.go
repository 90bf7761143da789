package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

// PoolFillOptions say how many pooled worktrees to keep ready, and at
// which base new ones are made.
type PoolFillOptions struct {
	Size int    // the pool's target: ready worktrees after the fill (default: pool.size, else 1)
	Base string // revision new ones are detached at; default HEAD of the main worktree
	// Settle waits, once, for the clock to pass the second git wrote
	// the new worktrees' indexes in, and refreshes them (readyPooled): up
	// to a second more for the fill, for a first git status in the
	// workspace that reads no file again. The server's background fill
	// settles; a fill the user waits for does not.
	Settle bool
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
		n, _, err := p.PoolSize()
		if err != nil {
			return nil, err
		}
		o.Size = max(n, 1)
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
	if err := p.refuseSubmoduleFill(ctx, reader, base, o.Base); err != nil {
		return nil, err
	}
	unlock, err := p.lockPoolFill(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
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
	var made []*pooledMade
	var ferr error
	var budget *poolBudget // the space one more may take (poolbudget.go)
	for ; ready < o.Size; ready++ {
		if ferr = ctx.Err(); ferr != nil {
			break
		}
		if budget == nil {
			if budget, ferr = p.fillBudget(ctx, base); ferr != nil {
				break
			}
		}
		if res.Stopped = budget.stop(p.reg.WorkspaceRoot, budget.est); res.Stopped != nil {
			break
		}
		p.progress(Progress{Op: "pool fill", Step: fmt.Sprintf("checking out %s into pooled worktree %d of %d", shortDigest(base), ready+1, o.Size)})
		m, err := p.fillOne(ctx, base, o.Base)
		if ferr = err; err != nil {
			break
		}
		made = append(made, m)
		budget.poolBytes += budget.est
	}
	// Those made are finished even when a later one failed.
	if err := p.readyPooled(ctx, made, o.Settle); err != nil && ferr == nil {
		ferr = err
	}
	for _, m := range made {
		res.Created = append(res.Created, poolView(m.rec))
	}
	if ferr != nil {
		return nil, ferr
	}
	after, err := p.PoolList()
	if err != nil {
		return nil, err
	}
	res.Pool = after.Pool
	return res, nil
}

// A pooledMade is a pooled worktree git has made, pinned, not yet ready:
// its entry and the stamp taken right after git made it.
type pooledMade struct {
	rec   *claimRecord
	entry string
	stamp *poolStamp
	kept  []string // pool.keep_ignored when the stamp was taken
}

// fillOne publishes a pooled worktree's claim and makes the worktree.
func (p *Provider) fillOne(ctx context.Context, base, baseRef string) (*pooledMade, error) {
	rec, err := p.publishPoolClaim(ctx, "pool fill", base, baseRef)
	if err != nil {
		return nil, err
	}
	if err := fpPoolClaimed.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	return p.makePooled(ctx, rec)
}

// publishPoolClaim publishes the claim of a new pooled worktree, detached
// at base, in a new folder of the workspace root: nothing is there yet.
func (p *Provider) publishPoolClaim(ctx context.Context, op, base, baseRef string) (*claimRecord, error) {
	id := newID()[:12]
	binding, path := poolBindingPrefix+id, p.poolPath(id)
	if err := os.MkdirAll(p.reg.WorkspaceRoot, 0o755); err != nil {
		return nil, &Error{Op: op, Path: p.reg.WorkspaceRoot, Err: err}
	}
	physical, err := pathid.Physical(path)
	if err != nil {
		return nil, &Error{Op: op, Path: path, Err: ErrInvalidArgument, Reason: err.Error()}
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
	return p.publishClaim(ctx, claim, requestArgs{Op: op, Binding: binding, Base: base, Path: path}, cleared, p.records.Prefetch())
}

// makePooled makes the worktree of a published pooled claim, pins its
// entry and takes its stamp. Any failure undoes the worktree.
func (p *Provider) makePooled(ctx context.Context, rec *claimRecord) (_ *pooledMade, err error) {
	c := rec.Claim
	if err := p.recordPoolSettings(ctx, rec); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	defer func() {
		if err != nil {
			p.dropPoolStamp(c.Binding) // its settings: nothing was made
		}
	}()
	if err := gitops.AddPoolWorktree(ctx, c.CommonDir, c.Path, c.Base, lockReason(rec)); err != nil {
		m := made{worktree: true}
		if errorsIsPathExists(err) {
			m = made{}
		}
		return nil, p.undoAllocation(ctx, rec, err, m)
	}
	all := made{worktree: true}
	if err := fpPoolAdded.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if err := pinEntry(rec); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	entry, err := verifyRepository("pool fill", rec)
	if err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	kept, err := p.PoolKeepIgnored()
	if err != nil {
		return &pooledMade{rec: rec, entry: entry}, nil // no stamp: its hand-out runs git status
	}
	stamp, _ := stampOf(rec, entry, kept) // none: its hand-out runs git status
	return &pooledMade{rec: rec, entry: entry, stamp: stamp, kept: kept}, nil
}

// madeClean reports whether git sees the pooled worktree of rec as git
// made it (HEAD detached at the base, no change, no untracked or ignored
// file), after its stamp was taken: only then may the stamp stand for a
// clean worktree. Anything written into it while git was making it (or
// before the stamp) would otherwise be stamped as clean and handed out.
func (p *Provider) madeClean(ctx context.Context, rec *claimRecord, entry string) bool {
	if checkPoolIndex(ctx, rec, entry, rec.Claim.Path) != nil {
		return false // a mark git status does not see past: no stamp
	}
	st, err := gitops.ReadStatus(ctx, rec.Claim.Path, gitops.StatusOptions{Ignored: true})
	return err == nil && st.Detached && st.Head == rec.Claim.Base && len(st.Entries) == 0
}

// readyPooled settles the pooled worktrees just made and publishes each
// one's created event: from then on an allocation may take it.
//
// Settling brings a worktree's index to the state of one in use for a
// while: git writes the files of a checkout in the same second as its
// index, and marks them "racily clean", so that every later command that
// cannot rewrite the index reads them again (the hand-out's switch would,
// for each file it changes). Once the clock has passed the newest index's
// second, one refresh per worktree rewrites the index with real stat
// data, and the stamp is taken again: kept only when nothing but the
// index changed since git made the worktree (else the worktree is stamped
// with nothing, and its hand-out runs git status). Either way a stamp is
// recorded only when git status, run after it was taken, finds the
// worktree clean (madeClean). An interrupted wait
// skips the refresh. Without settle, the worktrees are published ready at
// once, as git left them: a hand-out's switch then reads again only the
// files it changes, and the workspace's first git status every file, as
// after git worktree add.
func (p *Provider) readyPooled(ctx context.Context, ms []*pooledMade, settle bool) error {
	var newest time.Time
	for _, m := range ms {
		if fi, err := os.Stat(filepath.Join(m.entry, "index")); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	settle = settle && !newest.IsZero()
	if settle {
		select {
		case <-ctx.Done():
			settle = false
		case <-time.After(time.Until(newest.Truncate(time.Second).Add(time.Second + 10*time.Millisecond))):
		}
	}
	for _, m := range ms {
		if settle && m.stamp != nil {
			if clean, err := gitops.RefreshIndex(ctx, m.rec.Claim.Path); err != nil || !clean {
				m.stamp = nil
			} else if after, err := stampOf(m.rec, m.entry, m.kept); err != nil || after.Tree != m.stamp.Tree || after.Head != m.stamp.Head {
				m.stamp = nil
			} else {
				m.stamp = after
			}
		}
		if m.stamp != nil && p.madeClean(ctx, m.rec, m.entry) {
			p.writePoolStamp(m.stamp)
		}
		id, err := pathid.Lstat(m.rec.Claim.Path)
		if err != nil {
			return p.undoAllocation(ctx, m.rec, err, made{worktree: true})
		}
		if _, err := p.records.Publish(m.rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: m.rec.Claim.Base}); err != nil {
			return p.undoAllocation(ctx, m.rec, err, made{worktree: true})
		}
		if err := fpPoolCreated.Inject(); err != nil {
			return err
		}
	}
	return nil
}
