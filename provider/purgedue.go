package provider

// What is due, and the purge of it. The oldest kept trash goes first
// when the kept trash together is over trash.max_bytes or the free space
// under trash.min_free; but a trash the purge must leave (its salvage
// failed, a peer is inside it, someone else locked it, its binding is
// busy) frees nothing: only what was really deleted counts, so a purge
// that leaves the oldest goes on to the next one while the bounds are
// still not met.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
)

// trashKey names a kept trash: its binding and claim.
func trashKey(binding string, seq int) string { return fmt.Sprintf("%s#%d", binding, seq) }

// markDue marks, in out (oldest first, their own Due set: expired or
// interrupted), the oldest kept trash that goes early: for the budget,
// until the rest, with the pooled worktrees the pool cannot give back at
// once (ps.otherBytes), fits trash.max_bytes; for the floor, on each file
// system, until the free space (counting what goes already, and the
// ready pooled worktrees on it, which go first: poolbudget.go) is above
// trash.min_free. A trash in stays (left by this purge) goes nowhere: it
// is counted as staying, whatever its Due, and frees nothing.
func markDue(out []KeptTrash, tp TrashPolicy, stays map[string]bool, ps poolSpace, poolDir string) {
	stay := func(k *KeptTrash) bool { return stays[trashKey(k.Binding, k.Seq)] }
	total := ps.otherBytes
	for i := range out {
		if k := &out[i]; (k.Due == "" || stay(k)) && k.SizeBytes > 0 {
			total += k.SizeBytes
		}
	}
	for i := range out {
		if total <= tp.MaxBytes {
			break
		}
		if k := &out[i]; k.Due == "" && !stay(k) {
			k.Due = DueBudget
			total -= max(k.SizeBytes, 0)
		}
	}
	type fsys struct{ free, floor int64 }
	seen := map[string]*fsys{}
	keys := make([]string, len(out))
	for i := range out {
		k := &out[i]
		keys[i] = spaceKey(k.Path)
		fs := seen[keys[i]]
		if fs == nil {
			free, total, err := gitops.FreeSpace(filepath.Dir(k.Path))
			if err != nil {
				continue
			}
			fs = &fsys{free: free, floor: tp.floor(total)}
			if keys[i] == spaceKey(poolDir) {
				fs.free += ps.readyBytes
			}
			seen[keys[i]] = fs
		}
		if k.Due != "" && !stay(k) {
			fs.free += max(k.SizeBytes, 0)
		}
	}
	for i := range out {
		k := &out[i]
		fs := seen[keys[i]]
		if fs == nil || k.Due != "" || stay(k) || fs.free >= fs.floor {
			continue
		}
		k.Due = DueSpace
		fs.free += max(k.SizeBytes, 0)
	}
}

// PurgeDue purges every kept trash folder that is due now (KeptTrash),
// oldest first, each with its salvage first (see the top of purge.go).
// What cannot be purged now is left and reported with why (and the
// salvage this purge made of it, if any); what is due is computed again
// after each trash left, counting it as staying, so that the bounds are
// met by the next oldest. An error is returned only when the trash
// cannot be listed at all. The majlis server runs it in the background;
// without a server, majlis gc does, or the majlis command that
// reclaimed, once its result is written.
func (p *Provider) PurgeDue(ctx context.Context) (*PurgeResult, error) {
	tp, err := p.TrashPolicy()
	if err != nil {
		return nil, err
	}
	res := &PurgeResult{Purged: []PurgedTrash{}, Left: []PurgedTrash{}, PoolDrained: []PoolWorktree{}}
	// Space short: the pool gives back first (a pooled worktree is cheap
	// to make again; a kept trash is someone's undo). What it could not
	// give back counts in the budget below.
	if drained, err := p.givePoolBack(ctx, tp); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return res, cerr
		}
		p.log.Warn("the warm pool could not give back space before the purge", "error", err)
	} else if drained != nil {
		res.PoolDrained = append(res.PoolDrained, drained.Drained...)
		for _, l := range drained.Left {
			p.log.Warn("a pooled worktree was not given back for space", "path", l.Path, "reason", l.Reason)
		}
	}
	left, tried := map[string]bool{}, map[string]bool{}
	for {
		all, err := p.records.All()
		if err != nil {
			return nil, err
		}
		kept := p.keptTrashLeaving(all, tp, sizesMeasured, left) // what was left frees nothing
		var next *KeptTrash
		for i := range kept {
			if k := &kept[i]; k.Due != "" && !tried[trashKey(k.Binding, k.Seq)] {
				next = k
				break
			}
		}
		if next == nil {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		k := *next
		tried[trashKey(k.Binding, k.Seq)] = true
		pt, err := p.purgeKept(ctx, k.Binding, k.Seq, k.Due)
		if err != nil {
			if errors.Is(err, errPurgeGone) {
				continue // purged or restored meanwhile
			}
			l := PurgedTrash{Binding: k.Binding, Seq: k.Seq, Path: k.Path, Due: k.Due, Reason: err.Error()}
			if pt != nil {
				l.SalvageRef = pt.SalvageRef
			}
			res.Left = append(res.Left, l)
			left[trashKey(k.Binding, k.Seq)] = true
			if cerr := ctx.Err(); cerr != nil {
				return res, cerr // stopped at a safe point (a server's stop, Ctrl-C)
			}
			p.log.Warn("a kept trash folder was due and was not purged", "binding", k.Binding, "path", k.Path, "error", err)
			continue
		}
		res.Purged = append(res.Purged, *pt)
	}
}
