package coordination_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
	"github.com/majlis-dev/majlis/fixtures"
)

// ledger opens a ledger on the shared server under the test's prefix.
func ledger(t *testing.T, o coordination.Options) *coordination.Ledger {
	t.Helper()
	o.Endpoints = []string{etcdtest.Shared(t).Endpoint}
	o.Prefix = etcdtest.Prefix(t)
	if o.RepositoryKey == "" {
		o.RepositoryKey = "example.com/ledger"
	}
	if o.Clone == "" {
		o.Clone = "C-" + t.Name()
	}
	l, err := coordination.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestDuplicateMachineID: a second live host with the same machine id and
// another boot id is refused; the same host (same boot) is not.
func TestDuplicateMachineID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one := &coordination.HostIdentity{MachineID: "m-shared", BootID: "boot-1", Hostname: "one"}
	two := &coordination.HostIdentity{MachineID: "m-shared", BootID: "boot-2", Hostname: "two"}
	if _, err := ledger(t, coordination.Options{Identity: one}).View(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger(t, coordination.Options{Identity: one, Clone: "C-other"}).View(ctx); err != nil {
		t.Fatalf("the same host again: %v", err)
	}
	_, err := ledger(t, coordination.Options{Identity: two}).View(ctx)
	if !errors.Is(err, admission.ErrDuplicateMachineID) {
		t.Fatalf("a second host with the same machine id: %v", err)
	}
	other := &coordination.HostIdentity{MachineID: "m-other", BootID: "boot-1", Hostname: "three"}
	if _, err := ledger(t, coordination.Options{Identity: other}).View(ctx); err != nil {
		t.Fatalf("another machine: %v", err)
	}
}

// TestClusterChanged: a clone that knew another cluster id refuses until
// it is confirmed; one that knew none records the id.
func TestClusterChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var recorded string
	l := ledger(t, coordination.Options{RecordCluster: func(id string) error { recorded = id; return nil }})
	if _, err := l.View(ctx); err != nil || recorded == "" {
		t.Fatalf("first contact: %v, recorded %q", err, recorded)
	}
	_, err := ledger(t, coordination.Options{KnownCluster: "0123abcd"}).View(ctx)
	var ae *admission.Error
	if !errors.Is(err, admission.ErrClusterChanged) || !errors.As(err, &ae) || ae.Details["cluster_id"] != recorded {
		t.Fatalf("another cluster id: %v", err)
	}
	if _, err := ledger(t, coordination.Options{KnownCluster: recorded}).View(ctx); err != nil {
		t.Fatalf("the confirmed id: %v", err)
	}
}

// TestNoRepositoryKey: a clone that names a cluster but has no key (no
// policy key, a local origin) refuses intents and cluster names with the
// reason, and still grants files and host names.
func TestNoRepositoryKey(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	state := filepath.Join(repo.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := admission.Open(t.Context(), state, admission.Options{HostLedger: filepath.Join(t.TempDir(), "h.db"),
		Shared: admission.RefusingLedger(&admission.Error{Op: "coordination", Err: admission.ErrInvalid, Reason: "no repository key"})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, r := range []string{"intent:src/**", "cluster:x"} {
		if _, err := s.Acquire(t.Context(), admission.AcquireRequest{Holder: "a", Checkout: repo.Dir, Resources: []string{r}}); !errors.Is(err, admission.ErrInvalid) {
			t.Errorf("%s: %v", r, err)
		}
	}
	if _, err := s.Acquire(t.Context(), admission.AcquireRequest{Holder: "a", Checkout: repo.Dir, Resources: []string{"file:a", "host:h-no-key"}}); err != nil {
		t.Fatal(err)
	}
}

// TestUnreachable: with the cluster unreachable, shared leases are refused
// within the bound (coordination_unavailable, naming the endpoint), local
// ones granted, and LiveLeases refuses: a reclaim must not take a task
// that may hold shared leases for lease-free.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	state := filepath.Join(repo.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	const endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	l, err := coordination.Open(coordination.Options{Endpoints: []string{endpoint}, RepositoryKey: "example.com/down",
		Clone: "C-down", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := admission.Open(t.Context(), state, admission.Options{HostLedger: filepath.Join(t.TempDir(), "h.db"), Shared: l})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for _, r := range []string{"intent:src/**", "cluster:down"} {
		_, err := s.Acquire(ctx, admission.AcquireRequest{Holder: "a", Checkout: repo.Dir, Resources: []string{r}})
		var ae *admission.Error
		if !errors.Is(err, admission.ErrCoordinationUnavailable) || !errors.As(err, &ae) || !strings.Contains(ae.Reason, endpoint) {
			t.Fatalf("%s: %v", r, err)
		}
	}
	if _, err := s.Acquire(ctx, admission.AcquireRequest{Holder: "a", Checkout: repo.Dir, Resources: []string{"file:a", "host:h-down"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LiveLeases(ctx, "a", ""); !errors.Is(err, admission.ErrCoordinationUnavailable) {
		t.Fatalf("LiveLeases with the cluster down: %v", err)
	}
	if ls, err := s.List(ctx, admission.ListRequest{}); !errors.Is(err, admission.ErrCoordinationUnavailable) {
		t.Fatalf("List with the cluster down: %v, %v", ls, err)
	}
}

// TestConcurrentClones: clones on one cluster asking for the same cluster
// name and overlapping intents at once: one transaction wins each, the
// others read again and are refused; never two grants.
func TestConcurrentClones(t *testing.T) {
	t.Parallel()
	const n = 4
	svcs := make([]*admission.Service, n)
	dirs := make([]string, n)
	for i := range n {
		repo := fixtures.NewRepo(t)
		state := filepath.Join(repo.CommonDir(), "majlis")
		if err := os.MkdirAll(state, 0o755); err != nil {
			t.Fatal(err)
		}
		svcs[i], dirs[i] = openShared(t, state, time.Now, "example.com/concurrent"), repo.Dir
		t.Cleanup(func() { svcs[i].Close() })
		if _, err := svcs[i].SetPolicy(t.Context(), admission.PolicyCrossWorktreeOverlap, "block"); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		errs := make(chan error, n)
		for i := range n {
			go func() {
				_, err := svcs[i].Acquire(t.Context(), admission.AcquireRequest{Holder: "T", Checkout: dirs[i],
					Resources: []string{"cluster:concurrent-" + strconv.Itoa(round), "intent:src/**"}})
				errs <- err
			}()
		}
		granted := 0
		for range n {
			err := <-errs
			switch {
			case err == nil:
				granted++
			case !errors.Is(err, admission.ErrHeld):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if granted != 1 {
			t.Fatalf("round %d: %d clones were granted the same cluster name", round, granted)
		}
		for i := range n {
			if _, err := svcs[i].Release(t.Context(), admission.ReleaseRequest{Holder: "T", Force: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
