package admissiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/majlis-dev/majlis/admission"
)

// TestConflictRules runs every scope pair, in the same checkout and in
// another worktree, literal and /**, under each value of the policy key
// that decides it: holder "old" holds the first resource, holder "new"
// asks for the second.
func testConflictRules(t *testing.T, open Factory) {
	e := newEnv(t, open)
	for _, pair := range conflictPairs {
		values := []admission.PolicyValue{admission.Allow, admission.Warn, admission.Block}
		if pair.policy == "" || pair.policy == admission.PolicyHostSingleton || pair.policy == "unsafe" {
			values = []admission.PolicyValue{""}
		}
		for _, v := range values {
			where := "same"
			if !pair.sameCheckout {
				where = "other"
			}
			name := fmt.Sprintf("%s/%s/%s/%s", pair.existing, pair.requested, where, v)
			t.Run(name, func(t *testing.T) { checkConflict(t, e, pair, v) })
		}
	}
}

// A conflictPair is a resource held and one asked for, and the policy
// key that decides their conflict.
type conflictPair struct {
	existing, requested string
	sameCheckout        bool
	policy              string // the key deciding the conflict; "" for none, "unsafe" for a refused path
}

// The checkout the pair's second resource is asked for in.
const inSame, inOther = true, false

var conflictPairs = []conflictPair{
	// file / file
	{"file:src/a.go", "file:src/a.go", inSame, admission.PolicySameCheckoutConflict},
	{"file:src/a.go", "file:src/a.go", inOther, ""}, // checkouts are isolated
	{"file:src/a.go", "file:src/b.go", inSame, ""},
	{"file:src/a.go", "file:src/a.go/../a.go", inSame, "unsafe"},
	// file / intent
	{"file:src/a.go", "intent:src/**", inSame, admission.PolicySameCheckoutConflict},
	{"file:src/a.go", "intent:src/**", inOther, admission.PolicyCrossWorktreeOverlap},
	{"file:src/a.go", "intent:src/a.go", inSame, admission.PolicySameCheckoutConflict},
	{"file:src/a.go", "intent:src/a.go", inOther, admission.PolicyCrossWorktreeOverlap},
	{"file:src/a.go", "intent:**", inSame, admission.PolicySameCheckoutConflict},
	{"file:src/a.go", "intent:src", inSame, ""}, // a literal intent covers only itself
	{"file:src/a.go", "intent:docs/**", inSame, ""},
	{"file:src/a.go", "intent:sr/**", inOther, ""}, // components, not string prefixes
	// intent / file
	{"intent:src/**", "file:src/a.go", inSame, admission.PolicySameCheckoutConflict},
	{"intent:src/**", "file:src/a.go", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:src/a.go", "file:src/a.go", inSame, admission.PolicySameCheckoutConflict},
	{"intent:src/a.go", "file:src/a.go", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:**", "file:README.md", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:src/auth/**", "file:src/a.go", inSame, ""},
	// intent / intent
	{"intent:src/**", "intent:src/auth/**", inSame, admission.PolicySameCheckoutConflict},
	{"intent:src/**", "intent:src/auth/**", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:src/auth/**", "intent:src/**", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:src/auth/**", "intent:src/api/**", inSame, ""},
	{"intent:src", "intent:src", inSame, admission.PolicySameCheckoutConflict},
	{"intent:src", "intent:src/**", inOther, admission.PolicyCrossWorktreeOverlap},
	{"intent:src/a.go", "intent:src/b.go", inSame, ""},
	{"intent:**", "intent:docs/x", inSame, admission.PolicySameCheckoutConflict},
	// host / host: machine-wide, whatever the checkout
	{"host:port:3000", "host:port:3000", inSame, admission.PolicyHostSingleton},
	{"host:port:3000", "host:port:3000", inOther, admission.PolicyHostSingleton},
	{"host:port:3000", "host:port:3001", inSame, ""},
	// across scopes: names never meet paths
	{"host:src/a.go", "file:src/a.go", inSame, ""},
	{"file:src/a.go", "host:src/a.go", inSame, ""},
}

// checkConflict runs one pair under policy value v: holder "old" holds
// the existing resource, holder "new" asks for the requested one.
func checkConflict(t *testing.T, e *env, pair conflictPair, v admission.PolicyValue) {
	ctx := context.Background()
	if v != "" {
		if _, err := e.s.SetPolicy(ctx, pair.policy, string(v)); err != nil {
			t.Fatal(err)
		}
		defer e.s.SetPolicy(ctx, pair.policy, string(admission.DefaultPolicy().Value(pair.policy)))
	}
	defer func() {
		for _, h := range []string{"old", "new"} {
			if _, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf(h), Holder: h}); err != nil {
				t.Fatal(err)
			}
		}
	}()
	old := e.mustAcquire("old", e.main.Dir, pair.existing).Leases[0]
	dir := e.main.Dir
	if !pair.sameCheckout {
		dir = e.linked.Dir
	}
	res, err := e.acquire("new", dir, pair.requested)
	want := "grant"
	switch {
	case pair.policy == "unsafe":
		want = "unsafe"
	case pair.policy == admission.PolicyHostSingleton || v == admission.Block:
		want = "deny"
	case v == admission.Warn:
		want = "warn"
	}
	switch want {
	case "unsafe":
		wantErr(t, err, admission.ErrUnsafePath)
		return
	case "deny":
		ae := wantErr(t, err, admission.ErrHeld)
		if len(ae.Conflicts) != 1 {
			t.Fatalf("conflicts = %+v, want one", ae.Conflicts)
		}
		c := ae.Conflicts[0]
		if c.Policy != pair.policy || c.Lease.ID != old.ID || c.Lease.Holder != "old" || c.Lease.State != admission.StateActive {
			t.Fatalf("conflict = %+v, want lease %s of old decided by %s", c, old.ID, pair.policy)
		}
		if l := e.list(false); len(l) != 1 {
			t.Fatalf("a denied acquire left leases: %+v", l)
		}
		return
	}
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if len(res.Leases) != 1 || res.Leases[0].Holder != "new" || res.Leases[0].State != admission.StateActive {
		t.Fatalf("leases = %+v", res.Leases)
	}
	wantDecided := []string{}
	if pair.policy != "" {
		wantDecided = []string{pair.policy}
	}
	if !slices.Equal(res.DecidedBy, wantDecided) {
		t.Errorf("decided_by = %v, want %v", res.DecidedBy, wantDecided)
	}
	if want == "grant" {
		if len(res.Warnings) != 0 {
			t.Errorf("warnings = %+v, want none", res.Warnings)
		}
		return
	}
	if len(res.Warnings) != 1 {
		t.Fatalf("warnings = %+v, want one", res.Warnings)
	}
	w := res.Warnings[0]
	if w.Policy != pair.policy || w.Lease == nil || w.Lease.ID != old.ID {
		t.Errorf("warning = %+v, want policy %s naming lease %s", w, pair.policy, old.ID)
	}
	wantCode := "checkout_conflict"
	if pair.policy == admission.PolicyCrossWorktreeOverlap {
		wantCode = "intent_overlap"
	}
	if w.Code != wantCode {
		t.Errorf("warning code = %q, want %q", w.Code, wantCode)
	}
}

// TestSameHolder: a holder never conflicts with its own active leases,
// and asking again for what it holds returns the same lease.
func testSameHolder(t *testing.T, open Factory) {
	e := newEnv(t, open)
	first := e.mustAcquire("a", "", "file:src/a.go", "host:port:1")
	again := e.mustAcquire("a", "", "intent:src/**", "file:src/a.go", "host:port:1")
	if len(again.Leases) != 3 {
		t.Fatalf("leases = %+v", again.Leases)
	}
	if again.Leases[1] != first.Leases[0] || again.Leases[2] != first.Leases[1] {
		t.Errorf("re-acquired leases changed:\n%+v\n%+v", first.Leases, again.Leases[1:])
	}
	if !slices.Equal(again.Reused, []string{first.Leases[0].ID, first.Leases[1].ID}) {
		t.Errorf("reused = %v", again.Reused)
	}
	// The same file in another checkout is another resource.
	other := e.mustAcquire("a", e.linked.Dir, "file:src/a.go")
	if len(other.Reused) != 0 || other.Leases[0].ID == first.Leases[0].ID {
		t.Errorf("a file in another checkout was reused: %+v", other)
	}
}

// TestDenialIsAllOrNothing: one blocked resource refuses the whole set,
// and every conflict is listed.
func testDenialIsAllOrNothing(t *testing.T, open Factory) {
	e := newEnv(t, open)
	e.mustAcquire("a", "", "file:src/a.go", "file:src/b.go")
	_, err := e.acquire("b", "", "file:src/c.go", "file:src/a.go", "intent:src/**")
	ae := wantErr(t, err, admission.ErrHeld)
	if len(ae.Conflicts) != 3 { // a.go; src/** against a.go and b.go
		t.Fatalf("conflicts = %+v", ae.Conflicts)
	}
	for _, l := range e.list(true) {
		if l.Holder == "b" {
			t.Fatalf("a denied request left %+v", l)
		}
	}
	if _, err := e.acquire("b", "", "file:src/c.go"); err != nil {
		t.Fatal(err)
	}
}

// TestUnsafePathTouchesNoLedger: a path refusal comes before any ledger
// work, whatever else the request holds.
func testUnsafePathTouchesNoLedger(t *testing.T, open Factory) {
	e := newEnv(t, open)
	e.main.Symlink("/etc", "out")
	_, err := e.acquire("a", "", "host:port:1", "file:out/passwd")
	wantErr(t, err, admission.ErrUnsafePath)
	if l := e.list(true); len(l) != 0 {
		t.Fatalf("leases after a refused request: %+v", l)
	}
	if _, err := e.acquire("a", "", "file:README.md/../x"); !errors.Is(err, admission.ErrUnsafePath) {
		t.Fatalf("traversal: %v", err)
	}
}
