package admission_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/majlis-dev/majlis/admission"
)

// Two agents in one checkout: the first declares it will work under
// src/auth and takes port 3000; the second asks for a file inside that
// intent and for the same port, and is refused with the conflicts, until
// the first releases its leases.
func ExampleService_Acquire() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "majlis-example-")
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo")
	if err := exec.Command("git", "init", "--quiet", repo).Run(); err != nil {
		fmt.Println(err)
		return
	}
	state := filepath.Join(repo, ".git", "majlis") // what `majlis init` creates
	os.Mkdir(state, 0o755)

	s, err := admission.Open(ctx, state, admission.Options{HostLedger: filepath.Join(dir, "host.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// The client's secret lease token: renewing and releasing need it.
	token := admission.NewToken()
	res, err := s.Acquire(ctx, admission.AcquireRequest{Token: token, Holder: "agent-1", Checkout: repo,
		Resources: []string{"intent:src/auth/**", "host:port:3000"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range res.Leases {
		fmt.Println(l.Holder, l.Resource, l.State, l.Generation)
	}

	_, err = s.Acquire(ctx, admission.AcquireRequest{Holder: "agent-2", Checkout: repo,
		Resources: []string{"file:src/auth/session.go", "host:port:3000"}})
	var ae *admission.Error
	if errors.Is(err, admission.ErrHeld) && errors.As(err, &ae) {
		for _, c := range ae.Conflicts {
			fmt.Println("refused", c.Resource, "held by", c.Lease.Holder, "decided by", c.Policy)
		}
	}

	// Once agent-1 releases its leases (with its token), agent-2 is
	// admitted; the port's generation has grown.
	rel, err := s.Release(ctx, admission.ReleaseRequest{Holder: "agent-1", Token: token})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("released", len(rel.Leases))
	res, err = s.Acquire(ctx, admission.AcquireRequest{Holder: "agent-2", Checkout: repo,
		Resources: []string{"file:src/auth/session.go", "host:port:3000"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range res.Leases {
		fmt.Println(l.Holder, l.Resource, l.State, l.Generation)
	}
	// Output:
	// agent-1 intent:src/auth/** active 1
	// agent-1 host:port:3000 active 1
	// refused host:port:3000 held by agent-1 decided by host_singleton
	// refused file:src/auth/session.go held by agent-1 decided by same_checkout_conflict
	// released 2
	// agent-2 file:src/auth/session.go active 1
	// agent-2 host:port:3000 active 2
}
