package provider

// The warm pool's share of the disk (pool.md, "Disk space"). The pooled
// worktrees and the kept trash share one budget (trash.max_bytes) and one
// floor of free space (trash.min_free); the pool alone is also bounded by
// pool.max_bytes. A fill stops before one more pooled worktree would pass
// any of them (poolRoom). When space is short, the ready pooled worktrees
// are given back before any kept trash is purged early (givePoolBack,
// called by PurgeDue): a pooled worktree is cheap to make again, a kept
// trash is someone's undo. So what is due early (markDue) counts the
// ready pooled worktrees as space the pool gives back first, and only the
// others (filling, set aside, being drained: the pool cannot give them
// back at once) in the budget.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// poolSpace is the disk space the pooled worktrees take.
type poolSpace struct {
	ready      []poolSized // the ready ones, oldest first
	readyBytes int64
	// otherBytes: those in the pool that are not ready (filling, set
	// aside, being drained). One an allocation took is becoming a
	// workspace and counts as nothing.
	otherBytes int64
	unknown    bool // a size could not be known (not measured, or not measurable)
}

type poolSized struct {
	rec  *claimRecord
	size int64
}

func (ps poolSpace) bytes() int64 { return ps.readyBytes + ps.otherBytes }

// poolSpaceOf sums the sizes of the pooled worktrees among all, known as
// mode says (trashsize.go's cache holds them beside the kept trash's).
func (p *Provider) poolSpaceOf(all [][]*claimRecord, ts *trashSizes, mode sizeMode) poolSpace {
	var ps poolSpace
	for _, recs := range all {
		for _, r := range recs {
			if !r.isPool() {
				continue
			}
			state := poolState(r)
			if state == "" || state == wire.PoolTaken {
				continue
			}
			n := p.cachedTrashSize(ts, r.Claim.Binding, r.Claim.Seq, r.Claim.Path, mode == sizesMeasured)
			if n < 0 {
				ps.unknown, n = true, 0
			}
			if state == wire.PoolReady {
				ps.ready = append(ps.ready, poolSized{rec: r, size: n})
				ps.readyBytes += n
				continue
			}
			ps.otherBytes += n
		}
	}
	sort.SliceStable(ps.ready, func(i, j int) bool { return ps.ready[i].rec.Claim.CreatedAt.Before(ps.ready[j].rec.Claim.CreatedAt) })
	return ps
}

// spaceKey names the file system holding path's folder: its device, or
// the folder when it cannot be looked at.
func spaceKey(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Dir(path), &st); err != nil {
		return "dir:" + filepath.Dir(path)
	}
	return fmt.Sprintf("dev:%d", st.Dev)
}

// poolBudget is what a fill checks each new pooled worktree against.
type poolBudget struct {
	tp         TrashPolicy
	maxPool    int64
	maxText    string
	poolBytes  int64 // the pool now, plus what this fill made
	trashBytes int64 // the kept trash that stays (not expired)
	unknown    bool  // a pooled worktree's size could not be measured
	est        int64 // what one more pooled worktree takes, about
}

// poolBudgetNow measures the pool and the kept trash for a fill.
func (p *Provider) poolBudgetNow() (*poolBudget, error) {
	tp, err := p.TrashPolicy()
	if err != nil {
		return nil, err
	}
	b := &poolBudget{tp: tp}
	if b.maxPool, b.maxText, _, err = p.PoolMaxBytes(); err != nil {
		return nil, err
	}
	all, err := p.records.All()
	if err != nil {
		return nil, err
	}
	ts := p.loadTrashSizes()
	defer p.saveTrashSizes(ts)
	ps := p.poolSpaceOf(all, ts, sizesMeasured)
	b.poolBytes, b.unknown = ps.bytes(), ps.unknown
	for _, k := range p.keptTrashLeaving(all, tp, sizesMeasured, nil) {
		if k.Due != DueExpired && k.Due != DueInterrupted {
			b.trashBytes += max(k.SizeBytes, 0)
		}
	}
	return b, nil
}

// fillBudget measures the pool and the kept trash for a fill of pooled
// worktrees at base, and estimates what one of them takes.
func (p *Provider) fillBudget(ctx context.Context, base string) (*poolBudget, error) {
	b, err := p.poolBudgetNow()
	if err != nil {
		return nil, err
	}
	if b.est, err = gitops.CheckoutSize(ctx, p.reg.CommonDir, base); err != nil {
		return nil, &Error{Op: "pool fill", Err: err, Reason: "the size of a checkout of " + shortDigest(base) + " could not be read"}
	}
	return b, nil
}

// stop says why one more pooled worktree of about est bytes does not fit
// (nil when it does): past pool.max_bytes, past the budget it shares
// with the kept trash, or the free space of the pool's disk below the
// floor. The free space is read afresh.
func (b *poolBudget) stop(dir string, est int64) *wire.PoolStop {
	if b.unknown {
		return &wire.PoolStop{Reason: wire.PoolStopUnmeasured, Message: "the space a pooled worktree takes could not be measured"}
	}
	if b.poolBytes+est > b.maxPool {
		return &wire.PoolStop{Reason: wire.PoolStopMaxBytes, Message: fmt.Sprintf(
			"the pooled worktrees take %s; one more (about %s) would pass pool.max_bytes (%s)",
			ByteSize(b.poolBytes), ByteSize(est), b.maxText)}
	}
	if b.trashBytes+b.poolBytes+est > b.tp.MaxBytes {
		return &wire.PoolStop{Reason: wire.PoolStopBudget, Message: fmt.Sprintf(
			"the kept trash (%s) and the pool (%s) share trash.max_bytes (%s); one more pooled worktree (about %s) would pass it",
			ByteSize(b.trashBytes), ByteSize(b.poolBytes), b.tp.Values[PolicyTrashMaxBytes], ByteSize(est))}
	}
	free, total, err := gitops.FreeSpace(existingAncestor(dir))
	if err != nil {
		return &wire.PoolStop{Reason: wire.PoolStopUnmeasured, Message: fmt.Sprintf("the free space of the pool's disk could not be read: %v", err)}
	}
	if floor := b.tp.floor(total); free-est < floor {
		return &wire.PoolStop{Reason: wire.PoolStopFreeSpace, Message: fmt.Sprintf(
			"the pool's disk has %s free; one more pooled worktree (about %s) would take it below trash.min_free (%s, %s)",
			ByteSize(free), ByteSize(est), b.tp.Values[PolicyTrashMinFree], ByteSize(floor))}
	}
	return nil
}

// givePoolBack drains, oldest first, as many ready pooled worktrees as
// it takes to bring the kept trash and the pool within trash.max_bytes
// and the free space of the pool's disk above trash.min_free, counting
// the kept trash that goes anyway (expired) as gone. It goes through the
// pool's drain (PoolDrain), which deletes only what it verified clean
// and still majlis's. It returns what the drain deleted and left.
func (p *Provider) givePoolBack(ctx context.Context, tp TrashPolicy) (*PoolResult, error) {
	all, err := p.records.All()
	if err != nil {
		return nil, err
	}
	ts := p.loadTrashSizes()
	ps := p.poolSpaceOf(all, ts, sizesMeasured)
	p.saveTrashSizes(ts)
	if len(ps.ready) == 0 {
		return nil, nil
	}
	need, err := p.spaceNeeded(all, tp, ps)
	if err != nil || need <= 0 {
		return nil, err
	}
	n := 0
	for _, r := range ps.ready {
		if need <= 0 {
			break
		}
		need -= r.size
		n++
	}
	return p.PoolDrain(ctx, PoolDrainOptions{Keep: len(ps.ready) - n})
}

// spaceNeeded returns how many bytes the pool must give back: what the
// kept trash that stays and the pool take beyond trash.max_bytes, or
// what the free space of the pool's disk lacks to trash.min_free once
// the expired trash on it is gone, whichever is more.
func (p *Provider) spaceNeeded(all [][]*claimRecord, tp TrashPolicy, ps poolSpace) (int64, error) {
	kept := p.keptTrashLeaving(all, tp, sizesMeasured, nil)
	free, total, err := gitops.FreeSpace(p.reg.WorkspaceRoot)
	if err != nil {
		return 0, err
	}
	pool := spaceKey(p.poolDirKey())
	var stay int64
	for _, k := range kept {
		switch {
		case k.Due != DueExpired && k.Due != DueInterrupted:
			stay += max(k.SizeBytes, 0)
		case spaceKey(k.Path) == pool:
			free += max(k.SizeBytes, 0)
		}
	}
	return max(stay+ps.bytes()-tp.MaxBytes, tp.floor(total)-free), nil
}

// existingAncestor is dir, or its nearest ancestor that exists: the
// folder whose file system a folder not made yet will be on.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Lstat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// poolDirKey is a path in the folder that holds the pooled worktrees
// (spaceKey looks at its folder).
func (p *Provider) poolDirKey() string { return filepath.Join(p.reg.WorkspaceRoot, poolFolderPrefix) }

// poolMayGiveBack tells, cheaply (remembered sizes, one statfs), whether
// a purge should give back ready pooled worktrees for space: with kept,
// the kept trash as keptTrash lists it, the pool and the trash that stay
// are over trash.max_bytes, or the pool's disk is below trash.min_free.
func (p *Provider) poolMayGiveBack(all [][]*claimRecord, tp TrashPolicy, kept []KeptTrash) bool {
	ts := p.loadTrashSizes()
	ps := p.poolSpaceOf(all, ts, sizesRemembered)
	if len(ps.ready) == 0 {
		return false
	}
	stay := ps.bytes()
	for _, k := range kept {
		if k.Due != DueExpired && k.Due != DueInterrupted {
			stay += max(k.SizeBytes, 0)
		}
	}
	free, total, err := gitops.FreeSpace(p.reg.WorkspaceRoot)
	return stay > tp.MaxBytes || err != nil || free < tp.floor(total)
}

// poolReadyBytes is the space the ready pooled worktrees take, as
// remembered (unknown sizes count as nothing).
func (p *Provider) poolReadyBytes(all [][]*claimRecord) int64 {
	return p.poolSpaceOf(all, p.loadTrashSizes(), sizesRemembered).readyBytes
}
