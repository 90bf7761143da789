package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/majlis-dev/majlis/reservation"
)

// A process takes a lease, verifies it before the effect it protects, and
// releases it. A second acquirer is refused with the holder's facts.
func Example() {
	dir, _ := os.MkdirTemp("", "leases")
	defer os.RemoveAll(dir)
	leases, err := reservation.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer leases.Close()

	ctx := context.Background()
	req := reservation.Request{
		Resource: "reclaim.T-14",
		Purpose:  "reclaim",
		TTL:      2 * time.Minute,
		Metadata: map[string]string{"binding": "T-14"},
	}
	l, err := leases.Acquire(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("generation", l.Record().Generation)

	_, err = leases.Acquire(ctx, req)
	var e *reservation.Error
	if errors.Is(err, reservation.ErrHeld) && errors.As(err, &e) {
		fmt.Println("held by pid", e.Holder.Owner.PID == os.Getpid())
	}

	if err := l.Check(); err != nil { // immediately before the protected effect
		log.Fatal(err)
	}
	if err := l.Release(); err != nil {
		log.Fatal(err)
	}
	l, _ = leases.Acquire(ctx, req)
	fmt.Println("generation", l.Record().Generation)
	l.Release()
	// Output:
	// generation 1
	// held by pid true
	// generation 2
}

// Recover retires an expired lease only when its owner is proven dead.
func ExampleDir_Recover() {
	dir, _ := os.MkdirTemp("", "leases")
	defer os.RemoveAll(dir)
	leases, _ := reservation.Open(dir)
	defer leases.Close()

	l, _ := leases.Acquire(context.Background(), reservation.Request{Resource: "publication", Purpose: "allocate", TTL: time.Minute})
	defer l.Release()

	_, err := leases.Recover(context.Background(), "publication")
	fmt.Println(errors.Is(err, reservation.ErrNotExpired))
	// Output:
	// true
}

// A Session keeps a lease alive while the work it protects runs under the
// session's context; losing the lease cancels that context.
func ExampleSession() {
	dir, _ := os.MkdirTemp("", "leases")
	defer os.RemoveAll(dir)
	leases, err := reservation.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer leases.Close()

	l, err := leases.Acquire(context.Background(), reservation.Request{Resource: "reclaim.T-14", Purpose: "reclaim", TTL: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	s, err := reservation.NewSession(l, time.Minute) // renewed every 20s
	if err != nil {
		log.Fatal(err)
	}
	defer s.Release()
	ctx, cancel := s.Context(context.Background())
	defer cancel()

	// The work: each effect the lease protects is preceded by Check.
	if err := s.Check(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("working:", ctx.Err() == nil)

	// Someone removes the lease file: the next Check (or renewal) finds
	// the lease lost, ends the session and cancels the work's context.
	os.Remove(l.Path())
	err = s.Check()
	<-ctx.Done()
	fmt.Println("lost:", errors.Is(err, reservation.ErrNotOwner), errors.Is(context.Cause(ctx), reservation.ErrNotOwner))
	// Output:
	// working: true
	// lost: true true
}
