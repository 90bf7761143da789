package admissiontest

import (
	"context"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/pathid"
)

// quarantine makes holder "a" hold file:src/a.go with a 1m ttl, then lets
// it expire without release.
func quarantine(t *testing.T, e *env, ownerPID int) admission.Lease {
	t.Helper()
	res, err := e.s.Acquire(context.Background(), admission.AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, TTL: time.Minute,
		Resources: []string{"file:src/a.go"}, OwnerPID: ownerPID})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	l := e.lease(res.Leases[0].ID)
	if l.State != admission.StateQuarantined {
		t.Fatalf("expired lease is %s, want quarantined", l.State)
	}
	return l
}

func testQuarantineBlocks(t *testing.T, open Factory) {
	e := newEnv(t, open)
	q := quarantine(t, e, 0)
	for _, r := range []string{"file:src/a.go", "intent:src/**"} {
		_, err := e.acquire("b", "", r)
		ae := wantErr(t, err, admission.ErrQuarantined)
		if ae.Conflicts[0].Lease.ID != q.ID || ae.Conflicts[0].Lease.State != admission.StateQuarantined ||
			ae.Conflicts[0].Policy != admission.PolicySameCheckoutConflict {
			t.Fatalf("conflicts = %+v", ae.Conflicts)
		}
	}
	// Its own holder is refused too: expiry took its permission away.
	_, err := e.acquire("a", "", "file:src/a.go")
	wantErr(t, err, admission.ErrQuarantined)
	// A warn-level conflict with a quarantined lease is a warning.
	res := e.mustAcquire("b", e.linked.Dir, "intent:src/**")
	if len(res.Warnings) != 1 || res.Warnings[0].Lease.State != admission.StateQuarantined {
		t.Fatalf("warnings = %+v", res.Warnings)
	}
}

func testQuarantineCannotBeRenewed(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	q := quarantine(t, e, 0)
	_, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", IDs: []string{q.ID}})
	wantErr(t, err, admission.ErrQuarantined)
	_, err = e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a"})
	wantErr(t, err, admission.ErrQuarantined)
	if l := e.lease(q.ID); l.ExpiresAt != q.ExpiresAt {
		t.Fatalf("a refused renewal changed the expiry: %v -> %v", q.ExpiresAt, l.ExpiresAt)
	}
	// Renewing everything renews the active ones and names the rest.
	act := e.mustAcquire("a", "", "file:src/b.go").Leases[0]
	res, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Leases) != 1 || res.Leases[0].ID != act.ID || !res.Leases[0].ExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("renewed %+v", res.Leases)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Lease.ID != q.ID {
		t.Fatalf("warnings = %+v", res.Warnings)
	}
}

func testQuarantineLiftedByRelease(t *testing.T, open Factory) {
	e := newEnv(t, open)
	q := quarantine(t, e, 0)
	_, err := e.s.Release(context.Background(), admission.ReleaseRequest{Token: tokenOf("b"), Holder: "b", IDs: []string{q.ID}})
	wantErr(t, err, admission.ErrNotHolder)
	res, err := e.s.Release(context.Background(), admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a", IDs: []string{q.ID}})
	if err != nil || len(res.Leases) != 1 || res.Leases[0].State != admission.StateReleased {
		t.Fatalf("release: %+v, %v", res, err)
	}
	e.mustAcquire("b", "", "file:src/a.go")
}

func testQuarantineLiftedByResolve(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	active := e.mustAcquire("c", "", "file:src/c.go").Leases[0]
	_, err := e.s.Resolve(ctx, admission.ResolveRequest{ID: active.ID, WriterStopped: true})
	wantErr(t, err, admission.ErrNotQuarantined)
	_, err = e.s.Resolve(ctx, admission.ResolveRequest{ID: "L-0000000000000000", WriterStopped: true})
	wantErr(t, err, admission.ErrNotFound)

	q := quarantine(t, e, 0)
	_, err = e.s.Resolve(ctx, admission.ResolveRequest{ID: q.ID})
	wantErr(t, err, admission.ErrInvalid)
	if _, err := e.acquire("b", "", "file:src/a.go"); err == nil {
		t.Fatal("a refused resolve lifted the quarantine")
	}
	l, err := e.s.Resolve(ctx, admission.ResolveRequest{ID: q.ID, WriterStopped: true})
	if err != nil || l.State != admission.StateResolved || l.ResolvedHow != "writer_stopped" {
		t.Fatalf("resolve: %+v, %v", l, err)
	}
	e.mustAcquire("b", "", "file:src/a.go")
	// Resolving again returns it unchanged.
	again, err := e.s.Resolve(ctx, admission.ResolveRequest{ID: q.ID, WriterStopped: true})
	if err != nil || *again.ResolvedAt != *l.ResolvedAt {
		t.Fatalf("resolve again: %+v, %v", again, err)
	}
	// A released lease needs no resolving.
	r := e.mustAcquire("d", "", "file:src/d.go").Leases[0]
	e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("d"), Holder: "d"})
	_, err = e.s.Resolve(ctx, admission.ResolveRequest{ID: r.ID, WriterStopped: true})
	wantErr(t, err, admission.ErrNotQuarantined)
}

// TestQuarantineOwnerDead: a quarantined lease whose recorded owner
// process is proven dead is resolved by the next admission that meets it;
// while the owner lives, it stays quarantined.
func testQuarantineOwnerDead(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	owner := startSleeper(t)
	q := quarantine(t, e, owner.cmd.Process.Pid)
	if q.OwnerPID != owner.cmd.Process.Pid {
		t.Fatalf("owner_pid = %d, want %d", q.OwnerPID, owner.cmd.Process.Pid)
	}
	if live, err := e.s.LiveLeases(ctx, "a", ""); err != nil || len(live) != 1 {
		t.Fatalf("LiveLeases with a live owner = %v, %v", live, err)
	}
	_, err := e.acquire("b", "", "file:src/a.go")
	wantErr(t, err, admission.ErrQuarantined)

	if live, _ := e.s.LiveLeases(ctx, "a", ""); len(live) != 1 || live[0].Recoverable {
		t.Fatalf("LiveLeases with a live owner: %+v, want it not recoverable", live)
	}
	owner.kill(t)
	// Its owner dead, the lease keeps nothing in use: it is returned
	// recoverable (a reclaim retires it), and listed so.
	if live, err := e.s.LiveLeases(ctx, "a", ""); err != nil || len(live) != 1 || !live[0].Recoverable {
		t.Fatalf("LiveLeases with a dead owner = %+v, %v; want the lease, recoverable", live, err)
	}
	if l := e.lease(q.ID); !l.Recoverable {
		t.Fatalf("List after the owner died: %+v, want it recoverable", l)
	}
	if l := e.lease(q.ID); l.State != admission.StateQuarantined {
		t.Fatalf("List changed the lease: %+v", l)
	}
	e.mustAcquire("b", "", "file:src/a.go")
	l := e.lease(q.ID)
	if l.State != admission.StateResolved || l.ResolvedHow != "owner_dead" {
		t.Fatalf("lease after its owner died = %+v", l)
	}
}

// TestOwnerDeadResolvedOnDenial: what a denied admission settled (an
// owner-dead resolution) is kept.
func testOwnerDeadResolvedOnDenial(t *testing.T, open Factory) {
	e := newEnv(t, open)
	owner := startSleeper(t)
	q := quarantine(t, e, owner.cmd.Process.Pid)
	owner.kill(t)
	e.mustAcquire("c", "", "file:src/b.go")
	_, err := e.acquire("b", "", "file:src/a.go", "file:src/b.go")
	wantErr(t, err, admission.ErrHeld)
	if l := e.lease(q.ID); l.State != admission.StateResolved {
		t.Fatalf("lease = %+v, want resolved", l)
	}
}

func testOwnerPIDMustRun(t *testing.T, open Factory) {
	e := newEnv(t, open)
	owner := startSleeper(t)
	pid := owner.cmd.Process.Pid
	owner.kill(t)
	_, err := e.s.Acquire(context.Background(), admission.AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir,
		Resources: []string{"file:x"}, OwnerPID: pid})
	wantErr(t, err, admission.ErrInvalid)
}

func testLiveLeases(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	root, err := pathid.Physical(e.main.Dir)
	if err != nil {
		t.Fatal(err)
	}
	live := func(h, checkout string) int {
		t.Helper()
		ls, err := e.s.LiveLeases(ctx, h, checkout)
		if err != nil {
			t.Fatal(err)
		}
		return len(ls)
	}
	if live("a", root) != 0 {
		t.Fatal("no leases, yet live")
	}
	e.mustAcquire("a", "", "host:port:1")
	if live("a", "") != 1 {
		t.Fatal("a host lease taken from this repository does not count")
	}
	e.mustAcquire("b", "", "file:src/x.go")
	if live("nobody", root) != 1 || live("nobody", "/elsewhere") != 0 {
		t.Fatal("a lease taken in the checkout does not count for it, or counts elsewhere")
	}
	e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a"})
	e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("b"), Holder: "b"})
	quarantine(t, e, 0)
	if live("a", "") != 1 {
		t.Fatal("a quarantined lease without owner is not live")
	}
	e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a"})
	if live("a", root) != 0 {
		t.Fatal("released, yet live")
	}
}
