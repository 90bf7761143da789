package provider

import (
	"fmt"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// FindingPoolRecycleInterrupted: the purge of a kept trash that was
// recycling it into the pool (pool_recycle.go) died before the pooled
// worktree was ready; the next purge finishes it.
const FindingPoolRecycleInterrupted = "pool_recycle_interrupted"

// recyclings maps each pooled worktree's binding that a purge, not
// finished, was recycling a kept trash into, to that trash's claim.
func recyclings(inv *inventory) map[string]*claimRecord {
	out := map[string]*claimRecord{}
	for _, recs := range inv.good {
		for _, r := range recs {
			if ev := r.Events[EventPurging]; ev != nil && isPoolBinding(ev.Taker) && !r.has(EventPurged) {
				out[ev.Taker] = r
			}
		}
	}
	return out
}

// recycleFinding reports the pooled worktree r when an interrupted purge
// was recycling a kept trash into it (trash, from recyclings).
func recycleFinding(r, trash *claimRecord) (Finding, bool) {
	switch poolState(r) {
	case wire.PoolFilling:
		if live, _ := procid.Judge(r.Claim.Allocator); live != procid.Dead {
			return Finding{}, false // the purge is under way
		}
	case wire.PoolAside: // a drain looked at it meanwhile, and left it
	default:
		return Finding{}, false
	}
	if trash == nil {
		return Finding{}, false
	}
	where := "the salvage refs of " + trash.Claim.Binding
	if refs := salvagesOf(trash); len(refs) > 0 {
		where = refs[len(refs)-1]
	}
	return Finding{Code: FindingPoolRecycleInterrupted, Severity: SeverityWarning, Binding: r.Claim.Binding, Path: r.Claim.Path,
		Message: fmt.Sprintf("the purge of the kept trash of %s died while it was recycling the folder into pooled worktree %s: "+
			"the folder is in its trash folder or in the pool's folder, not ready", trash.Claim.Binding, r.Claim.Path),
		Fix: "majlis gc --purge-due finishes the purge: it deletes the folder, wherever it is, and what the recycling made (the work of " +
			trash.Claim.Binding + " is on " + where + ")"}, true
}
