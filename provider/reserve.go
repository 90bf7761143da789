package provider

// Reclaim reservations. A reclaim (and a restore from the trash, and the
// purge of a kept trash folder) works under its binding's reservation, a
// lease file of package reservation registered under the brief
// publication lease. A reservation.Session keeps it alive while the work
// goes on; the work runs under the session's context, so that a lost
// reservation cancels it, and every destructive step checks the session
// first (recheck).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/reservation"
)

// reclaimPrefix names reclaim reservations in the lease folder.
const reclaimPrefix = "reclaim."

// reserve registers the per-binding reclaim reservation under the brief
// publication lease and keeps it alive (p.ttl) until the session is
// released. A reservation whose owner is proven dead (and which has
// expired) is recovered first.
func (p *Provider) reserve(ctx context.Context, rec *claimRecord, requestID string) (*reservation.Session, error) {
	return p.reserveAt(ctx, rec, requestID, "reclaim", rec.Claim.Path, rec.Claim.PhysicalPath)
}

// reservePurge registers the binding's reservation for the purge of its
// kept trash folder at trash: the reservation covers that folder, not the
// workspace's path, where the binding may have a live workspace again
// whose leases and allocations it must not block.
func (p *Provider) reservePurge(ctx context.Context, rec *claimRecord, trash string) (*reservation.Session, error) {
	return p.reserveAt(ctx, rec, "", "purge", trash, trash)
}

func (p *Provider) reserveAt(ctx context.Context, rec *claimRecord, requestID, purpose, path, physical string) (*reservation.Session, error) {
	c := rec.Claim
	pub, err := p.publicationLease(ctx, purpose+" "+c.Binding)
	if err != nil {
		return nil, err
	}
	defer pub.Release()
	req := reservation.Request{Resource: reclaimPrefix + c.Binding, Purpose: purpose, TTL: p.ttl,
		AuthorityDigest: rec.Digest,
		Metadata:        map[string]string{"binding": c.Binding, "request_id": requestID, "path": path, "physical_path": physical}}
	l, err := p.leases.Acquire(ctx, req)
	if errors.Is(err, reservation.ErrHeld) {
		if old, rerr := p.leases.Recover(ctx, req.Resource); rerr == nil {
			p.log.Info("recovered the reclaim reservation of a dead owner", "binding", c.Binding,
				"owner_pid", old.Owner.PID, "generation", old.Generation)
			l, err = p.leases.Acquire(ctx, req)
		}
	}
	if err != nil {
		return nil, err
	}
	s, err := reservation.NewSession(l, p.ttl)
	if err != nil {
		_ = l.Release()
		return nil, err
	}
	p.log.Debug("reclaim reservation taken", "binding", c.Binding, "generation", l.Record().Generation, "ttl", p.ttl)
	return s, nil
}

// lostOr returns err, or, when the reservation was lost, the loss: the
// work under the reservation was cancelled, or refused, because of it.
// The loss is an *Error wrapping the reservation's error (ErrNotOwner).
func (p *Provider) lostOr(binding string, s *reservation.Session, err error) error {
	if err == nil {
		return nil
	}
	lost := s.Lost()
	if lost == nil {
		return err
	}
	var pe *Error
	if errors.As(err, &pe) && errors.Is(err, lost) {
		return err // already the loss
	}
	p.log.Warn("reclaim reservation lost; the reclaim stopped", "binding", binding, "error", lost, "stopped_at", err)
	return &Error{Op: "reclaim", Binding: binding, Err: lost,
		Reason: "the reclaim stopped before its next step",
		Hint:   fmt.Sprintf("nothing was deleted that was not salvaged; retry the reclaim of %s, which resumes where this one stopped", binding)}
}

// RecoverReservation retires the binding's reclaim reservation when it has
// expired and its exact same-host owner is proven dead. It retires the
// lease file only: never the claim, the worktree or a ref.
// A retry with the same requestID returns the recorded result.
func (p *Provider) RecoverReservation(ctx context.Context, binding, requestID string) (*reservation.Record, error) {
	if err := ValidBinding(binding); err != nil {
		return nil, err
	}
	args := requestArgs{Op: "recover", Binding: binding}
	if rec, done, err := replay[reservation.Record](p.records, requestID, args); done || err != nil {
		return rec, err
	}
	rec, err := p.leases.Recover(ctx, reclaimPrefix+binding)
	if errors.Is(err, reservation.ErrNotFound) {
		// The words of the user: no reservation file named.
		return nil, &Error{Op: "recover", Binding: binding, Err: ErrNothingToRecover,
			Reason:  "no reclaim of " + binding + " is under way or crashed",
			Details: map[string]any{"resource": reclaimPrefix + binding, "path": filepath.Join(p.leases.Path(), reclaimPrefix+binding+".lease")}}
	}
	if err != nil {
		return nil, err
	}
	if requestID != "" {
		if err := p.records.RecordRequest(requestID, args, rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// inject runs the failpoint fp (package failpoint), after the provider's
// test hook when a test in this package set one: the hook sees the work's
// context, and may act (lose the reservation, say) at that point.
func (p *Provider) inject(ctx context.Context, fp *failpoint.Point) error {
	if p.hook != nil {
		p.hook(ctx, fp.Name())
	}
	return fp.Inject()
}
