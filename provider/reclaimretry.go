package provider

import (
	"context"
	"errors"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
)

// finishRecorded answers a retry (same request id) of a reclaim that was
// stopped after it recorded its end (the reclaimed event, which names the
// request id) and before it recorded its result: the claim is retired, so
// the binding has no live workspace and the retry would say not_found.
// It rebuilds the result from the claim's events, records it under the
// request id, and releases the reservation the stopped run left, which it
// first takes over exactly as a retried reclaim does (recovered when it
// has expired and its owner is proven dead; otherwise held, exit 4). found
// is false when no reclaimed claim of the binding names the request id.
func (p *Provider) finishRecorded(ctx context.Context, o ReclaimOptions, args requestArgs) (_ *ReclaimResult, found bool, _ error) {
	recs, err := p.records.Binding(o.Binding)
	if err != nil {
		return nil, false, nil // the caller's not_found stands; the records are reported elsewhere
	}
	var rec *claimRecord
	for i := len(recs) - 1; i >= 0 && rec == nil; i-- {
		if ev := recs[i].Events[EventReclaimed]; ev != nil && ev.RequestID == o.RequestID {
			rec = recs[i]
		}
	}
	if rec == nil {
		return nil, false, nil
	}
	held, err := p.leases.Inspect(reclaimPrefix + o.Binding)
	switch {
	case errors.Is(err, reservation.ErrNotFound):
	case err != nil:
		return nil, true, err
	case held.AuthorityDigest == rec.Digest:
		lease, err := p.reserve(ctx, rec, o.RequestID)
		if err != nil {
			return nil, true, err
		}
		defer lease.Release()
	}
	res := recordedResult(rec)
	if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
		return nil, true, err
	}
	p.forgetPreviews(o.Binding)
	p.log.Info("reclaim finished by its retry", "binding", o.Binding, "request_id", o.RequestID)
	return res, true, nil
}

// recordedResult is the result of a finished reclaim as its events tell
// it. What only the run knew (the counts of files not salvaged, trash it
// purged on the way) is not in them: zero and none.
func recordedResult(rec *claimRecord) *ReclaimResult {
	c := rec.Claim
	done := rec.Events[EventReclaimed]
	res := &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{},
		Removed: true, TrashPurged: []string{}}
	reclaimArrays(res)
	if sv := rec.Events[EventSalvaged]; sv != nil && sv.SalvageRef != "" {
		ref := sv.SalvageRef
		res.SalvageRef = &ref
		res.SalvageRefs = append(res.SalvageRefs, ref)
		res.StepsDone = append(res.StepsDone, "salvage")
	}
	if rec.has(EventMoved) {
		res.StepsDone = append(res.StepsDone, "move")
	} else if done.AdminKept != "" || rec.has(EventSalvaged) {
		res.StepsDone = append(res.StepsDone, "forget") // git's entry of a workspace whose folder was gone
	}
	if ck := rec.Events[EventChecked]; ck != nil && ck.SalvageRef != "" {
		ref := ck.SalvageRef
		res.SecondSalvageRef = &ref
		res.SalvageRefs = append(res.SalvageRefs, ref)
		res.StepsDone = append(res.StepsDone, "resalvage")
	}
	switch {
	case done.TrashPath != "" && done.KeepUntil != nil:
		until := *done.KeepUntil
		res.TrashPath, res.TrashKeptUntil = done.TrashPath, &until
		res.StepsDone = append(res.StepsDone, "keep-trash")
	case done.AdminKept != "" && done.KeepUntil != nil:
		until := *done.KeepUntil
		res.TrashPath, res.TrashKeptUntil = done.AdminKept, &until
		res.StepsDone = append(res.StepsDone, "keep-trash")
	case rec.has(EventMoved):
		res.StepsDone = append(res.StepsDone, "delete-trash")
	}
	return res
}

// recoverDeadReservation retires the reservation res when it has expired
// and its owner is proven dead (reservation.Recover decides both, under
// its side lock), and reports whether it did. Allocation calls it for a
// reservation in its way, so that a reclaimer killed long ago does not
// keep a path reserved until someone runs workspace recover.
func (p *Provider) recoverDeadReservation(ctx context.Context, res string) bool {
	a, err := p.leases.Assess(res)
	if err != nil || !a.Recoverable {
		return false
	}
	old, err := p.leases.Recover(ctx, res)
	if err != nil {
		return false
	}
	p.log.Info("recovered the reclaim reservation of a dead owner", "reservation", res, "owner_pid", old.Owner.PID, "generation", old.Generation)
	return true
}

// retireDoneReservation retires the reclaim reservation res when its
// owner is proven dead and the reclaim it was taken for is recorded done
// (its result written under its request id): a reclaimer killed between
// answering and letting go. Nothing is left for the reservation to
// protect, so it need not expire first (reservation.RecoverDead, which
// still requires its witness lock free: no process of the dead owner
// holds it). It reports whether it did. A reclaim's retry calls it, and
// so does an allocation the reservation is in the way of.
func (p *Provider) retireDoneReservation(ctx context.Context, res string) bool {
	a, err := p.leases.Assess(res)
	if err != nil || a.Liveness != procid.Dead || a.Record.Purpose != "reclaim" {
		return false
	}
	binding, id := a.Record.Metadata["binding"], a.Record.Metadata["request_id"]
	if id == "" || reclaimPrefix+binding != res {
		return false
	}
	r, err := p.records.Request(id)
	if err != nil || len(r.Result) == 0 || r.Args.Op != "reclaim" || r.Args.Binding != binding {
		return false
	}
	old, err := p.leases.RecoverDead(ctx, res)
	if err != nil {
		return false
	}
	p.log.Info("retired the reservation of a reclaim that finished and whose process died", "reservation", res, "request_id", id,
		"owner_pid", old.Owner.PID, "generation", old.Generation)
	return true
}

// startedBy reports whether the reclaim with request id requestID left
// its mark on binding's workspace: the latest claim's salvaged, moved or
// reclaimed event names the request.
func (p *Provider) startedBy(binding, requestID string) bool {
	recs, err := p.records.Binding(binding)
	if err != nil || len(recs) == 0 {
		return false
	}
	r := recs[len(recs)-1]
	for _, kind := range []string{EventSalvaged, EventMoved, EventReclaimed} {
		if ev := r.Events[kind]; ev != nil && ev.RequestID == requestID {
			return true
		}
	}
	return false
}
