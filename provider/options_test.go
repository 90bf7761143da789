package provider

import (
	"errors"
	"testing"
	"time"
)

// Open refuses a reservation TTL outside its bounds, and the options it
// accepts reach what they configure: the clock the records, the TTL the
// reclaim reservation.
func TestOpenOptions(t *testing.T) {
	t.Parallel()
	repo, _ := newProvider(t)
	for _, ttl := range []time.Duration{-time.Second, time.Millisecond, MinReservationTTL - 1, MaxReservationTTL + 1} {
		if p, err := Open(t.Context(), repo.Dir, Options{ReservationTTL: ttl}); !errors.Is(err, ErrInvalidArgument) {
			if p != nil {
				p.Close()
			}
			t.Errorf("Open with reservation TTL %v: %v, want ErrInvalidArgument", ttl, err)
		}
	}

	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p, err := Open(t.Context(), repo.Dir, Options{ReservationTTL: 7 * time.Second, Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if !ws.CreatedAt.Equal(at) {
		t.Errorf("workspace created at %v, want the clock's %v", ws.CreatedAt, at)
	}
	lease, err := p.reserve(t.Context(), peerCurrent(t, p, "T-1"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if rec := lease.Lease().Record(); rec.ExpiresAt.Sub(rec.AcquiredAt) != 7*time.Second {
		t.Errorf("reservation granted for %v, want Options.ReservationTTL 7s", rec.ExpiresAt.Sub(rec.AcquiredAt))
	}

	// The zero value is the default TTL.
	d, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.ttl != DefaultReservationTTL {
		t.Errorf("default reservation TTL %v, want %v", d.ttl, DefaultReservationTTL)
	}
}
