package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

// leaseLiveness refuses (ErrWorkspaceLive) while the workspace's task is
// still at work by the ledgers' account: the binding (the task's holder
// name, as `majlis begin` uses it) holds an active or quarantined lease,
// or some holder took one in the workspace's checkout.
//
// Every ledger that can hold such a lease is consulted: the repository
// ledger and the host ledger. A repository ledger that is missing (never
// created, or deleted) is created empty, so that the host ledger is still
// read: a missing ledger never means "no leases" for the other one. A
// ledger that cannot be read refuses, as any unreadable authority does.
//
// The ledgers are read under their write lock (admission.Service.LiveLeases),
// which is what lets a reclaim that holds its reservation trust the answer:
// see guardCheckout.
func (p *Provider) leaseLiveness(ctx context.Context, rec *claimRecord) error {
	c := rec.Claim
	svc, err := p.admission(ctx)
	if err != nil {
		return err
	}
	all, err := svc.LiveLeases(ctx, c.Binding, c.PhysicalPath)
	if err != nil {
		return err
	}
	// A lease whose owner process is proven dead keeps nothing in use: the
	// reclaim retires it as recovered (deadowner.go).
	live, _ := splitRecoverable(all)
	if len(live) == 0 {
		return nil
	}
	var names []string
	for i, l := range live {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(live)-3))
			break
		}
		names = append(names, fmt.Sprintf("%s %s (holder %s, %s until %s)", l.ID, l.Resource, l.Holder, l.State, l.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	reason := "leases keep it in use: " + strings.Join(names, "; ")
	hint := "let the holder release them with its lease token, or, for a quarantined one whose writer has stopped, resolve it (no token needed)"
	if state, _ := ownerState(&c); state == "exited" {
		// The workspace's owner is dead, yet these leases record no owner
		// (or another, live one): nothing proves their writer stopped.
		reason = fmt.Sprintf("its owner process %d is dead, but leases that record no dead owner keep it in use: %s", c.OwnerPID, strings.Join(names, "; "))
		hint = "once their writer has stopped, resolve each quarantined one with --writer-stopped (no token needed); " +
			"an active one is released by its holder with its lease token"
	}
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrWorkspaceLive,
		Reason: reason, Hint: hint, Details: liveDetails(c, live)}
}

// liveDetails are the facts of a workspace_live refusal for scripts: the
// leases that keep the workspace in use (holder, resource, expiry; the
// first one's holder and id also as "holder" and "lease") and its
// recorded owner with whether it is alive.
func liveDetails(c Claim, live []admission.Lease) map[string]any {
	d := map[string]any{"leases": leaseRefs(live)}
	if len(live) > 0 {
		d["holder"], d["lease"] = live[0].Holder, live[0].ID
	}
	if c.OwnerPID != 0 {
		state, _ := ownerState(&c)
		d["owner_pid"], d["owner_state"], d["owner_alive"] = c.OwnerPID, state, state == string(procid.Alive)
	}
	return d
}

// admissionOptions are the options every admission service of the
// provider is opened with: the host ledger and the provider's clock, and a guard that refuses
// leases in a checkout that a reclaim has reserved.
func (p *Provider) admissionOptions() (admission.Options, error) {
	host, err := p.hostLedger()
	if err != nil {
		return admission.Options{}, err
	}
	leases := p.leases
	return admission.Options{HostLedger: host, Now: p.now, ServesOthers: p.servesOthers, Guard: func(ctx context.Context, checkout string) error {
		return guardCheckout(leases, checkout)
	}}, nil
}

// guardCheckout refuses (admission.ErrReclaiming) a lease in checkout, a
// physical top level, while a reclaim reservation covers it: the target
// is the checkout or contains it. It also refuses a checkout that is gone
// (a reclaim that finished removes the directory before it lets go of
// its reservation).
//
// It runs inside the repository ledger's write transaction. The order
// between admission and reclaim (docs/reclaim.md) rests on it: a reclaim
// registers its reservation first, then reads the leases under the same
// write lock. An admission whose transaction began before the reservation
// existed has committed by then, so the reclaim sees its lease and
// refuses; one that began after sees the reservation here and refuses.
// Lock order everywhere: a reclaim reservation (and the publication lease
// that registers it) before the ledger's BEGIN IMMEDIATE; this guard only
// reads lease files, it takes no lock.
//
// leases is only read by path (List and Inspect open the files), so it
// stays usable after its Provider was closed.
func guardCheckout(leases *reservation.Dir, checkout string) error {
	names, err := leases.List(reclaimPrefix)
	if err != nil {
		return &admission.Error{Op: "acquire", Path: leases.Path(), Err: admission.ErrReclaiming,
			Reason: "the reclaim reservations cannot be read: " + err.Error(),
			Hint:   "majlis refuses a lease it cannot show to be outside every reclaim; check the state folder"}
	}
	for _, res := range names {
		rec, err := leases.Inspect(res)
		if errors.Is(err, reservation.ErrNotFound) {
			continue // released meanwhile
		}
		if err != nil {
			return err
		}
		target, ptarget := rec.Metadata["path"], rec.Metadata["physical_path"]
		if target == "" || ptarget == "" {
			// A reservation whose target is unknown may cover any checkout.
			return &admission.Error{Op: "acquire", Path: leases.Path(), Resource: res, Err: admission.ErrReclaiming,
				Reason:  "a reclaim reservation (of workspace " + rec.Metadata["binding"] + ") names no target path, so it may cover " + checkout,
				Hint:    "retry once its reclaim is over (if it died, once its reservation is recovered)",
				Details: map[string]any{"reclaim_binding": rec.Metadata["binding"]}}
		}
		covered := false
		for _, t := range []string{target, ptarget} {
			if t == "" {
				continue
			}
			if r := pathid.Relate(checkout, t); r == pathid.Equal || r == pathid.BContainsA {
				covered = true
			}
		}
		if covered {
			binding := rec.Metadata["binding"]
			return &admission.Error{Op: "acquire", Path: checkout, Resource: res, Err: admission.ErrReclaiming,
				Reason: fmt.Sprintf("the checkout %s is being reclaimed (the reclaim of workspace %s, request %q, covers it)",
					checkout, binding, rec.Metadata["request_id"]),
				Hint: "its files are about to be removed: take the lease in another checkout; if that reclaim died, " +
					"its reservation can be recovered once it has expired",
				Details: map[string]any{"reclaim_binding": binding}}
		}
	}
	if _, err := os.Lstat(filepath.Join(checkout, ".git")); err != nil {
		return &admission.Error{Op: "acquire", Path: checkout, Err: admission.ErrInvalid,
			Reason: "the checkout " + checkout + " is gone (" + err.Error() + ")",
			Hint:   "take the lease in a checkout that exists"}
	}
	return nil
}

// admission opens the repository's admission ledger once per Provider.
func (p *Provider) admission(ctx context.Context) (*admission.Service, error) {
	p.admMu.Lock()
	defer p.admMu.Unlock()
	if p.adm == nil {
		opts, err := p.admissionOptions()
		if err != nil {
			return nil, err
		}
		svc, err := admission.Open(ctx, p.stateDir, opts)
		if err != nil {
			return nil, err
		}
		if err := p.share(ctx, svc); err != nil {
			svc.Close()
			return nil, err
		}
		p.adm = svc
	}
	return p.adm, nil
}

// ownerLiveError refuses a reclaim whose recorded owner runs, with the
// leases the task holds too (best effort: they only inform).
func (p *Provider) ownerLiveError(ctx context.Context, rec *claimRecord, reason string) error {
	c := rec.Claim
	var live []admission.Lease
	if svc, err := p.admission(ctx); err == nil {
		live, _ = svc.LiveLeases(ctx, c.Binding, c.PhysicalPath)
	}
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrWorkspaceLive,
		Reason: reason, Hint: "stop the owner process (or wait for it to exit), then reclaim",
		Details: liveDetails(c, live)}
}
