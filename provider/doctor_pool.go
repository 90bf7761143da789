package provider

import (
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// Doctor's findings about the warm pool (pool*.go): each pooled worktree
// is in the pool (ready), in one workspace (taken, and that workspace
// made), or set aside. doctor names the others and what to run.
const (
	// FindingPoolAside: a pooled worktree failed a check and was set aside.
	FindingPoolAside = "pool_aside"
	// FindingPoolTakenUnfinished: an allocation took a pooled worktree and
	// died before its workspace was made.
	FindingPoolTakenUnfinished = "pool_taken_unfinished"
	// FindingPoolFillInterrupted: a fill died before its pooled worktree
	// was ready.
	FindingPoolFillInterrupted = "pool_fill_interrupted"
	// FindingPoolDrainInterrupted: a drain took a pooled worktree (and
	// maybe moved it aside, or deleted it) and stopped before it finished.
	FindingPoolDrainInterrupted = "pool_drain_interrupted"
	// FindingPoolMissing: the folder of a pooled worktree is gone.
	FindingPoolMissing = "pool_missing"
)

// poolMissingFinding is doctor's finding of a pooled worktree whose
// folder is gone (deleted by hand): git's entry of it may remain, locked.
func poolMissingFinding(r *claimRecord) Finding {
	c := r.Claim
	return Finding{Code: FindingPoolMissing, Severity: SeverityWarning, Binding: c.Binding, Path: c.Path,
		Message: "the folder of pooled worktree " + c.Path + " is gone",
		Fix: "majlis pool drain retires it: it deletes git's entry of it (pinned by its claim, its folder gone) " +
			"unless someone else locked it or it names a folder that exists, then retires its claim"}
}

// poolAsideFix is what doctor says of a pooled worktree set aside: what a
// drain does with it.
const poolAsideFix = "look at what is in it and copy out what you want; 'majlis pool drain' deletes it only once it is clean " +
	"(no change, no untracked or ignored file) at its base, or at the base the allocation that took it had switched it to, " +
	"and no process uses it; until then the drain leaves it where it is. If it holds nothing of anyone's, delete from it " +
	"what was added and put back what was changed (a workspace nested inside it is someone's: reclaim it first), then drain again"

// checkPool reports pooled worktrees that are neither ready nor in a
// workspace.
func (p *Provider) checkPool(inv *inventory, add func(Finding)) {
	byBinding := map[string][]*claimRecord{}
	for _, recs := range inv.good {
		if len(recs) > 0 {
			byBinding[recs[0].Claim.Binding] = recs
		}
	}
	recycled := recyclings(inv)
	for _, recs := range inv.good {
		for _, r := range recs {
			if !r.isPool() {
				continue
			}
			if f, ok := recycleFinding(r, recycled[r.Claim.Binding]); ok {
				add(f)
			} else if f, ok := p.poolFinding(r, byBinding); ok {
				add(f)
			}
		}
	}
}

func (p *Provider) poolFinding(r *claimRecord, byBinding map[string][]*claimRecord) (Finding, bool) {
	c := r.Claim
	f := Finding{Severity: SeverityWarning, Binding: c.Binding, Path: c.Path}
	switch poolState(r) {
	case wire.PoolAside:
		f.Code = FindingPoolAside
		f.Message = fmt.Sprintf("pooled worktree %s was set aside and is never handed out: %s", c.Path, r.Events[EventAside].Reason)
		if at, aside := drainedWhere(r); aside {
			f.Path = at
			f.Message += fmt.Sprintf(" (it is at %s, where a drain moved it)", at)
		}
		f.Fix = poolAsideFix
	case wire.PoolDraining:
		if held, err := p.leases.Inspect(reclaimPrefix + c.Binding); err == nil && held.AuthorityDigest == r.Digest {
			if live, _ := procid.Judge(held.Owner); live != procid.Dead {
				return f, false // a drain under way
			}
		}
		return drainFinding(r, f), true
	case wire.PoolTaken:
		ev := r.Events[EventTaken]
		switch takenOutcome(r, byBinding[ev.Taker]) {
		case takenAbandoned:
			f.Code = FindingPoolAside
			f.Message = fmt.Sprintf("an allocation of %s took pooled worktree %s and did not use it", ev.Taker, c.Path)
			f.Fix = "majlis pool drain (it deletes it once it is verified clean and majlis's)"
		case takenUnfinished:
			f.Code = FindingPoolTakenUnfinished
			f.Message = fmt.Sprintf("an allocation of %s (request %s) took pooled worktree %s and did not finish", ev.Taker, ev.RequestID, c.Path)
			f.Fix = fmt.Sprintf("retry it: majlis workspace allocate %s --request-id %s (with the same options)", ev.Taker, ev.RequestID)
		default:
			return f, false
		}
	case wire.PoolFilling:
		if live, _ := procid.Judge(c.Allocator); live != procid.Dead {
			return f, false
		}
		f.Code = FindingPoolFillInterrupted
		f.Message = fmt.Sprintf("a pool fill died before pooled worktree %s was ready", c.Path)
		f.Fix = "majlis pool drain (it deletes it once it is verified clean and majlis's)"
	default:
		return f, false
	}
	return f, true
}

// What became of a taken pooled worktree.
const (
	takenInWorkspace = "in_workspace" // it is the taker's workspace
	takenRunning     = "running"      // the taker's allocation is under way
	takenUnfinished  = "unfinished"   // the taker died: a retry with its request id finishes it
	takenAbandoned   = "abandoned"    // the taker failed, or made its workspace otherwise
)

// takenOutcome says what became of the taken pooled worktree r, from the
// records of its taker's binding: its claim (the one with the request id
// of the taken event, published before the pooled worktree was taken)
// made with the pooled worktree's folder, made otherwise or failed, or
// neither, its allocator alive or dead.
func takenOutcome(r *claimRecord, takerRecs []*claimRecord) string {
	ev, made := r.Events[EventTaken], r.Events[EventCreated]
	for _, t := range takerRecs {
		if t.Claim.RequestID != ev.RequestID {
			continue
		}
		if cr := t.Events[EventCreated]; cr != nil {
			if made != nil && cr.Dev == made.Dev && cr.Ino == made.Ino {
				return takenInWorkspace
			}
			return takenAbandoned
		}
		if t.has(EventFailed) {
			return takenAbandoned
		}
		if live, _ := procid.Judge(t.Claim.Allocator); live != procid.Dead {
			return takenRunning
		}
		return takenUnfinished
	}
	return takenRunning // its claim is not there to judge: leave it
}

// drainFinding is doctor's finding of a pooled worktree a drain took and
// did not finish: where it is, and that the next drain finishes it.
func drainFinding(r *claimRecord, f Finding) Finding {
	c := r.Claim
	f.Code = FindingPoolDrainInterrupted
	f.Fix = "majlis pool drain: it checks it again, deletes it only if it is clean and no process uses it, and otherwise " +
		"puts it back at " + c.Path + " and sets it aside"
	dr := r.Events[EventDraining]
	at, aside := drainedWhere(r)
	_, err := os.Lstat(c.Path)
	switch {
	case aside:
		f.Path = at
		f.Message = fmt.Sprintf("a drain moved pooled worktree %s aside to %s and stopped before it deleted it", c.Path, at)
	case err == nil:
		f.Message = fmt.Sprintf("a drain took pooled worktree %s and stopped before it deleted it; it is at its path", c.Path)
	case dr != nil:
		f.Message = fmt.Sprintf("a drain deleted pooled worktree %s and stopped before it removed git's entry of it and retired its claim", c.Path)
		f.Fix = "majlis pool drain finishes it"
	default:
		f.Message = fmt.Sprintf("a drain took pooled worktree %s, whose folder is gone", c.Path)
		f.Fix = "majlis pool drain retires its claim once git has no entry of it left; inspect git's worktree list"
	}
	return f
}
