package provider

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/wire"
)

// The warm pool (docs/pool.md): clean worktrees, detached, locked by
// majlis, made ahead of any task in folders beside the workspaces, each
// with a claim of the pool's kind (poolformat.go). Allocation takes one,
// verifies it, switches it to its base and renames it into place
// (pool_take.go). This file names them and reads their state; fill and
// drain are pool_fill.go and pool_drain.go.

// PoolWorktree and PoolResult are wire's: the result types are defined
// once, in the wire contract.
type (
	PoolWorktree = wire.PoolWorktree
	PoolResult   = wire.PoolResult
	PoolUse      = wire.PoolUse
)

const (
	// poolBindingPrefix starts the binding of every pooled worktree's
	// claim; no workspace may be allocated under such a name.
	poolBindingPrefix = "_pool-"
	// poolFolderPrefix starts the folder of every pooled worktree, in
	// the workspace root (the workspaces' own folder, so the same file
	// system and depth as theirs: handing one out is a rename).
	poolFolderPrefix = ".majlis-pool-"
)

var (
	fpPoolClaimed = failpoint.New("pool/claimed") // a fill published the claim, no worktree yet
	fpPoolAdded   = failpoint.New("pool/added")   // the worktree is made, not pinned nor recorded
	fpPoolCreated = failpoint.New("pool/created") // the pooled worktree is ready
	fpPoolDrain   = failpoint.New("pool/drain")   // a drain took one and recorded where it moves it, not yet moved
)

// isPoolBinding reports whether binding is reserved for a pooled worktree.
func isPoolBinding(binding string) bool { return strings.HasPrefix(binding, poolBindingPrefix) }

// poolState is the state of a pooled worktree's claim, or "" for one that
// is gone (failed, or drained).
func poolState(r *claimRecord) string {
	switch {
	case r.has(EventFailed), r.has(EventReclaimed), r.has(EventHanded):
		return ""
	case r.has(EventAside): // set aside after it was taken, too
		return wire.PoolAside
	case r.has(EventDraining), drainTook(r):
		return wire.PoolDraining
	case r.has(EventTaken):
		return wire.PoolTaken
	case r.has(EventCreated):
		return wire.PoolReady
	}
	return wire.PoolFilling
}

// poolView is what pool list shows of a pooled worktree's claim.
func poolView(r *claimRecord) PoolWorktree {
	w := PoolWorktree{Name: r.Claim.Binding, Path: r.Claim.Path, Base: r.Claim.Base, State: poolState(r),
		ClaimDigest: r.Digest, CreatedAt: r.Claim.CreatedAt}
	if ev := r.Events[EventTaken]; ev != nil && !drainTook(r) {
		w.Taker = ev.Taker
	}
	if at, aside := drainedWhere(r); aside {
		w.Path = at // a drain moved it aside and left it there
	}
	if ev := r.Events[EventAside]; ev != nil {
		w.Reason = ev.Reason
	}
	return w
}

// poolRecords returns the claims of the pooled worktrees that are still
// there (any state but gone), oldest first. It reads only the pool's
// bindings (one listing of the claims folder, then their records), so
// that an allocation with an empty pool pays one folder listing. A
// damaged pool binding refuses: the pool must be fully understood before
// one is handed out.
func (p *Provider) poolRecords() ([]*claimRecord, error) {
	bindings, err := p.records.Bindings()
	if err != nil {
		return nil, err
	}
	var out []*claimRecord
	for _, b := range bindings {
		if !isPoolBinding(b) {
			continue
		}
		recs, err := p.records.Binding(b)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.isPool() && poolState(r) != "" {
				out = append(out, r)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Claim.CreatedAt.Before(out[j].Claim.CreatedAt) })
	return out, nil
}

// PoolList returns the pooled worktrees of the repository, oldest first.
func (p *Provider) PoolList() (*PoolResult, error) {
	res := &PoolResult{Pool: []PoolWorktree{}, Created: []PoolWorktree{}, Drained: []PoolWorktree{}, Left: []PoolWorktree{}}
	recs, err := p.poolRecords()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		res.Pool = append(res.Pool, poolView(r))
	}
	return res, nil
}

// poolPath is the folder of the pooled worktree with id.
func (p *Provider) poolPath(id string) string {
	return filepath.Join(p.reg.WorkspaceRoot, poolFolderPrefix+id)
}

// errorsIsPathExists reports whether git found the path taken: then what
// is there is not the fill's.
func errorsIsPathExists(err error) bool { return errors.Is(err, gitops.ErrPathExists) }

// StatePooled is the state list --all reports for a pooled worktree
// (pool list says which: ready, filling or set aside).
const StatePooled = "pooled"

// listPooled reports whether list shows a pooled worktree's claim: with
// --all, while it is in the pool (ready, filling or set aside). One an
// allocation took is shown as its workspace.
func listPooled(r *claimRecord, all bool) bool {
	s := poolState(r)
	return all && s != "" && s != wire.PoolTaken
}
