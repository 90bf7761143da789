package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/internal/openers"
)

// A crashed agent: its process (the owner its workspace and leases
// record) was killed, and nothing released anything. Its proven death
// makes its leases recoverable (admission: anyone may release them
// without their token), so they keep nothing in use: list calls the
// workspace reclaimable, bulk reclaim --dead takes it, and the reclaim
// retires those leases as recovered (a release recorded with how
// owner_dead) before its first destructive step, through admission's own
// Release. A lease that records no owner, or a live one, still keeps the
// workspace in use: expiry proves nothing.
//
// A dead owner does not prove that the processes it started stopped: a
// dev server survives the kill of the agent that started it. The preview
// and list name the processes whose working directory or open files are
// inside the workspace (package openers), and a bulk reclaim leaves such
// a workspace out; a reclaim of it alone, its own preview's digest
// confirmed, goes ahead (the folder moves aside into the kept trash).

// A Process is one process that uses a workspace (openers.Process).
type Process = openers.Process

// splitRecoverable splits leases into those that keep a workspace in use
// and those whose owner is proven dead.
func splitRecoverable(ls []admission.Lease) (blocking, recoverable []admission.Lease) {
	for _, l := range ls {
		if l.Recoverable {
			recoverable = append(recoverable, l)
		} else {
			blocking = append(blocking, l)
		}
	}
	return blocking, recoverable
}

// retireDeadLeases releases, as recovered, the leases of rec's task and
// checkout whose owner process is proven dead, and returns them. A reclaim
// calls it under its reservation, its checks passed, before its first
// destructive step.
func (p *Provider) retireDeadLeases(ctx context.Context, rec *claimRecord) ([]LeaseRef, error) {
	svc, err := p.admission(ctx)
	if err != nil {
		return nil, err
	}
	live, err := svc.LiveLeases(ctx, rec.Claim.Binding, rec.Claim.PhysicalPath)
	if err != nil {
		return nil, err
	}
	_, dead := splitRecoverable(live)
	byHolder := map[string][]string{}
	for _, l := range dead {
		byHolder[l.Holder] = append(byHolder[l.Holder], l.ID)
	}
	holders := make([]string, 0, len(byHolder))
	for h := range byHolder {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	out := []LeaseRef{}
	for _, h := range holders {
		// No token: admission releases a lease whose owner is proven dead
		// for anyone, and records it as a recovery. A lease whose owner
		// came back to life is impossible (identities are exact), so a
		// refusal here is a failure of the reclaim, before any effect.
		res, err := svc.Release(ctx, admission.ReleaseRequest{Holder: h, IDs: byHolder[h]})
		if err != nil {
			return nil, err
		}
		for _, l := range res.Leases {
			r := leaseRef(l)
			r.Recoverable = true
			out = append(out, r)
		}
	}
	return out, nil
}

// workspaceProcesses returns the processes that use the workspace at
// physical (and lexical) path.
func workspaceProcesses(c *Claim) ([]Process, error) {
	found, err := openers.Scan([]string{c.PhysicalPath})
	if err != nil {
		return nil, err
	}
	if ps := found[c.PhysicalPath]; ps != nil {
		return ps, nil
	}
	return []Process{}, nil
}

// describeProcesses names the first few processes for a message.
func describeProcesses(ps []Process) string {
	var names []string
	for i, pr := range ps {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(ps)-3))
			break
		}
		how := "its working directory is inside"
		switch pr.Use {
		case openers.UseFile:
			how = "it has " + pr.Path + " open"
		case openers.UseMap:
			how = "it has " + pr.Path + " mapped in memory"
		case openers.UseExe:
			how = "it runs " + pr.Path
		case openers.UseRoot:
			how = "its root folder is inside"
		}
		names = append(names, fmt.Sprintf("pid %d (%s: %s)", pr.PID, pr.Command, how))
	}
	return strings.Join(names, "; ")
}

// processesError is a bulk reclaim's refusal of a workspace that
// processes still use.
func processesError(c *Claim, ps []Process, owner string) error {
	reason := "processes run inside it: " + describeProcesses(ps)
	if owner == "exited" {
		reason = fmt.Sprintf("its owner process %d is dead, but processes it may have started run inside it: %s", c.OwnerPID, describeProcesses(ps))
	}
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrWorkspaceLive, Reason: reason,
		Hint:    "a bulk reclaim leaves it out: stop them, or reclaim this workspace alone (its preview, then its digest confirmed; no lease token needed)",
		Details: map[string]any{"processes": ps, "binding": c.Binding, "owner_state": owner, "reclaim_alone": true}}
}

// recoverLeases retires the dead owner's leases of rec for a reclaim, and
// says so in its result.
func (p *Provider) recoverLeases(ctx context.Context, rec *claimRecord, res *ReclaimResult) error {
	recovered, err := p.retireDeadLeases(ctx, rec)
	if err != nil {
		return err
	}
	if len(recovered) > 0 {
		res.RecoveredLeases = append(res.RecoveredLeases, recovered...)
		res.StepsDone = append(res.StepsDone, "recover-leases")
	}
	return nil
}

// reclaimArrays makes every array of the result present (JSON: never null).
func reclaimArrays(r *ReclaimResult) {
	if r.SalvageRefs == nil {
		r.SalvageRefs = []string{}
	}
	if r.StepsDone == nil {
		r.StepsDone = []string{}
	}
	if r.TrashPurged == nil {
		r.TrashPurged = []string{}
	}
	if r.RecoveredLeases == nil {
		r.RecoveredLeases = []LeaseRef{}
	}
	if r.Submodules == nil {
		r.Submodules = []string{}
	}
}
