package provider

import (
	"errors"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/reservation"
)

// TestDeadPublisherRetiredAtOnce: a process killed while it held the
// publication lease (an allocation killed between its lease and its
// claim) left the lease to expire, and every allocation of the
// repository waited for it, then failed held. A holder proven dead is
// retired at once, without waiting; a live one is waited for and never
// retired.
func TestDeadPublisherRetiredAtOnce(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)

	// A live holder (another process) is not retired: with no wait the
	// publication lease is refused as held, and the holder keeps it.
	h := fixtures.StartHelper(t, childEnv, "hold-reservation", fixtures.HelperOptions{
		Env: []string{"MAJLIS_LEASES=" + p.leases.Path(), "MAJLIS_RESOURCE=publication"}, Lines: true})
	h.Expect("held")
	held, err := p.leases.Inspect("publication")
	if err != nil || held.Owner.PID != h.Pid() {
		t.Fatalf("the other process does not hold the publication lease: %+v %v", held, err)
	}
	if l, err := p.publicationLeaseWithin(t.Context(), "test", 0); !errors.Is(err, reservation.ErrHeld) {
		if l != nil {
			_ = l.Release()
		}
		t.Fatalf("took the publication lease from a live holder: %v", err)
	}
	if now, err := p.leases.Inspect("publication"); err != nil || now.Token != held.Token {
		t.Fatalf("the live holder's lease changed: %+v %v", now, err)
	}

	// Killed, it is proven dead: its lease (an hour from expiring) is
	// retired at once, and an allocation goes through.
	h.Kill()
	l, err := p.publicationLeaseWithin(t.Context(), "test", 0)
	if err != nil {
		t.Fatalf("the dead holder's publication lease was not retired: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	h2 := fixtures.StartHelper(t, childEnv, "hold-reservation", fixtures.HelperOptions{
		Env: []string{"MAJLIS_LEASES=" + p.leases.Path(), "MAJLIS_RESOURCE=publication"}, Lines: true})
	h2.Expect("held")
	h2.Kill()
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if _, err := p.leases.Inspect("publication"); !errors.Is(err, reservation.ErrNotFound) {
		t.Errorf("the publication lease is still held after the allocation: %v", err)
	}
}
