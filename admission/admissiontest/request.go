package admissiontest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
)

func testRequestID(t *testing.T, open Factory) {
	for _, tc := range []struct {
		name      string
		resources []string
	}{
		{"repository", []string{"file:src/a.go", "intent:docs/**"}},
		{"host", []string{"host:port:1"}},
		{"mixed", []string{"file:src/a.go", "host:port:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, open)
			ctx := context.Background()
			req := admission.AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, Resources: tc.resources, RequestID: "req-1"}
			first, err := e.s.Acquire(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if first.Replayed || first.RequestID != "req-1" {
				t.Fatalf("first = %+v", first)
			}
			before := e.list(true)
			e.clock.Advance(time.Second)

			// The same arguments, spelled differently (order, a path
			// relative to a subdirectory): the recorded result.
			again := req
			again.Resources = append([]string{}, tc.resources...)
			for i, j := 0, len(again.Resources)-1; i < j; i, j = i+1, j-1 {
				again.Resources[i], again.Resources[j] = again.Resources[j], again.Resources[i]
			}
			replay, err := e.s.Acquire(ctx, again)
			if err != nil {
				t.Fatal(err)
			}
			if !replay.Replayed {
				t.Fatal("replay not marked replayed")
			}
			replay.Replayed = false
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replayed result differs (-first +replay):\n%s", diff)
			}
			if diff := cmp.Diff(before, e.list(true)); diff != "" {
				t.Errorf("a replay changed the ledgers (-before +after):\n%s", diff)
			}

			// Other arguments under the same id refuse.
			for _, other := range []admission.AcquireRequest{
				{Token: tokenOf("b"), Holder: "b", Checkout: e.main.Dir, Resources: tc.resources, RequestID: "req-1"},
				{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, Resources: append([]string{"file:other"}, tc.resources...), RequestID: "req-1"},
				{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir, Resources: tc.resources, RequestID: "req-1", TTL: time.Hour},
				{Token: "another-token-0123456789", Holder: "a", Checkout: e.main.Dir, Resources: tc.resources, RequestID: "req-1"},
				{Holder: "a", Checkout: e.main.Dir, Resources: tc.resources, RequestID: "req-1"},
			} {
				_, err := e.s.Acquire(ctx, other)
				wantErr(t, err, admission.ErrRequestConflict)
			}
			if diff := cmp.Diff(before, e.list(true)); diff != "" {
				t.Errorf("a conflicting request changed the ledgers:\n%s", diff)
			}
		})
	}
}

// TestRequestIDNotRecordedOnDenial: a denied request leaves its id free,
// so a retry after the conflict clears is admitted.
func testRequestIDNotRecordedOnDenial(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	e.mustAcquire("a", "", "file:x")
	req := admission.AcquireRequest{Token: tokenOf("b"), Holder: "b", Checkout: e.main.Dir, Resources: []string{"file:x"}, RequestID: "r"}
	_, err := e.s.Acquire(ctx, req)
	wantErr(t, err, admission.ErrHeld)
	e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a"})
	res, err := e.s.Acquire(ctx, req)
	if err != nil || res.Replayed {
		t.Fatalf("retry: %+v, %v", res, err)
	}
}

func testRequestIDRenewReleaseResolve(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	l := e.mustAcquire("a", "", "file:x").Leases[0]
	r1, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", TTL: time.Hour, RequestID: "renew-1"})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	r2, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", TTL: time.Hour, RequestID: "renew-1"})
	if err != nil || !r2.Replayed || !r2.Leases[0].ExpiresAt.Equal(r1.Leases[0].ExpiresAt) {
		t.Fatalf("renew replay: %+v, %v", r2, err)
	}
	if got := e.lease(l.ID).ExpiresAt; !got.Equal(r1.Leases[0].ExpiresAt) {
		t.Fatalf("a replayed renewal extended the lease to %v", got)
	}
	_, err = e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", TTL: 2 * time.Hour, RequestID: "renew-1"})
	wantErr(t, err, admission.ErrRequestConflict)
	_, err = e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a", RequestID: "renew-1"})
	wantErr(t, err, admission.ErrRequestConflict)

	if _, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a", RequestID: "rel"}); err != nil {
		t.Fatal(err)
	}
	rel, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("a"), Holder: "a", RequestID: "rel"})
	if err != nil || !rel.Replayed || len(rel.Leases) != 1 {
		t.Fatalf("release replay: %+v, %v", rel, err)
	}
}

// TestGenerations: a resource's generation grows with every grant, across
// release and re-acquisition, and is never reused; resources count apart.
// (The SQLite ledgers count each resource 1, 2, 3...; a shared ledger's
// generations are its revisions, which grow too, but not by one.)
func testGenerations(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	want := map[string]int64{} // the last generation seen per resource
	for round := 1; round <= 4; round++ {
		for _, h := range []string{"a", "b"} {
			res := e.mustAcquire(h, "", "file:x", "intent:src/**", "host:port:1")
			for _, l := range res.Leases {
				if l.Generation <= want[l.Resource] {
					t.Fatalf("round %d: %s generation %d, not above %d", round, l.Resource, l.Generation, want[l.Resource])
				}
				want[l.Resource] = l.Generation
			}
			if _, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf(h), Holder: h}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Renewal keeps the generation; another checkout counts apart.
	l := e.mustAcquire("a", "", "file:x").Leases[0]
	r, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf("a"), Holder: "a", IDs: []string{l.ID}})
	if err != nil || r.Leases[0].Generation != l.Generation {
		t.Fatalf("renew: %+v, %v", r, err)
	}
	if g := e.mustAcquire("a", e.linked.Dir, "file:x").Leases[0].Generation; g != 1 {
		t.Fatalf("file:x in the linked worktree has generation %d, want 1", g)
	}
	// A denied mixed request may consume a host generation, never reuse one.
	e.mustAcquire("z", "", "file:blocked")
	_, err = e.acquire("y", "", "file:blocked", "host:port:1")
	wantErr(t, err, admission.ErrHeld)
	g := e.mustAcquire("y", "", "host:port:1").Leases[0].Generation
	if g <= want["host:port:1"] {
		t.Fatalf("host:port:1 generation %d after %d", g, want["host:port:1"])
	}
}
