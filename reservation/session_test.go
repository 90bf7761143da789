package reservation

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A session renews its lease on disk while it lasts.
func TestSessionRenews(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	s, err := NewSession(l, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	waitFor(t, "a renewal on disk", func() bool {
		rec, err := d.Inspect("res")
		return err == nil && rec.RenewedAt.After(rec.AcquiredAt)
	})
	if closed(s.Done()) || s.Err() != nil {
		t.Fatalf("the session ended while its lease is held: %v", s.Err())
	}
	if err := s.Check(); err != nil {
		t.Fatalf("check while held: %v", err)
	}
	rec, _ := d.Inspect("res")
	if rec.Token != l.Record().Token || rec.Generation != 1 || rec.ExpiresAt.Sub(rec.RenewedAt) != 300*time.Millisecond {
		t.Fatalf("the renewal changed the grant, or did not renew it for the session's TTL: %+v", rec)
	}
}

// A lease lost to another grant ends the session at the next renewal:
// Done is closed, Err says why (ErrNotOwner), and a context from Context
// is cancelled with that cause.
func TestSessionLostAtRenewal(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	s, err := NewSession(l, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	ctx, cancel := s.Context(t.Context())
	defer cancel()

	// Someone removes the lease file by hand, and another owner takes
	// the resource: the lease is lost.
	if err := os.Remove(l.Path()); err != nil {
		t.Fatal(err)
	}
	other := mustAcquire(t, d, req("res"))
	defer other.Release()

	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not end after its lease was lost")
	}
	if err := s.Err(); !errors.Is(err, ErrNotOwner) || !errors.Is(s.Lost(), ErrNotOwner) {
		t.Fatalf("Err = %v, Lost = %v; want ErrNotOwner", err, s.Lost())
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, ErrNotOwner) {
		t.Fatalf("context cause %v, want the loss (ErrNotOwner)", cause)
	}
	if err := s.Check(); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Check after the loss: %v, want ErrNotOwner", err)
	}
	// The other owner's grant is untouched, and this session never
	// renews it or releases it.
	if err := other.Check(); err != nil {
		t.Fatalf("the new owner's lease: %v", err)
	}
	if err := s.Release(); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("releasing a lost lease: %v, want ErrNotOwner", err)
	}
	if err := other.Check(); err != nil {
		t.Fatalf("the new owner's lease after the old session's release: %v", err)
	}
}

// Check sees a loss before the next renewal would, and ends the session
// at once.
func TestSessionLostAtCheck(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	s, err := NewSession(l, time.Hour) // no renewal during the test
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	ctx, cancel := s.Context(t.Context())
	defer cancel()
	if err := os.Remove(l.Path()); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Check of a removed lease: %v, want ErrNotOwner", err)
	}
	if !closed(s.Done()) {
		t.Fatal("Check found the lease lost, but the session goes on")
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), ErrNotOwner) {
		t.Fatalf("context cause %v", context.Cause(ctx))
	}
}

// Closing ends the session without losing the lease; Release releases
// it, once.
func TestSessionClose(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	s, err := NewSession(l, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := s.Context(t.Context())
	defer cancel()
	s.Close()
	if !closed(s.Done()) || !errors.Is(s.Err(), errSessionClosed) || s.Lost() != nil {
		t.Fatalf("after Close: done %v, Err %v, Lost %v", closed(s.Done()), s.Err(), s.Lost())
	}
	<-ctx.Done()
	if err := l.Check(); err != nil {
		t.Fatalf("Close let go of the lease: %v", err)
	}
	if err := s.Release(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if _, err := d.Inspect("res"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after Release: %v, want ErrNotFound", err)
	}
	if _, err := NewSession(l, 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewSession with TTL 0: %v, want ErrInvalid", err)
	}
}
