package admissiontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// TestPropertyNoConflictingGrants drives random sequences of acquire,
// renew, release, expiry (a fake clock) and resolve from several holders
// over a small resource universe in two checkouts. After every step it
// reads the ledgers (List) and checks, with a model written apart from the
// implementation, that no two live grants of different holders conflict
// at block level, that generations only grow, and that every acquire was
// granted exactly when the model says nothing blocks it.
func testPropertyNoConflictingGrants(t *testing.T, open Factory) {
	// Each run draws a new seed, so runs add up; make soak runs 20 times
	// as many steps.
	steps := fixtures.Rounds(150, 3000)
	if testing.Short() {
		steps = 60
	}
	for _, pol := range []admission.PolicySet{
		admission.DefaultPolicy(),
		{SameCheckoutConflict: admission.Block, CrossWorktreeOverlap: admission.Block, EnforcementGap: admission.Warn},
		{SameCheckoutConflict: admission.Warn, CrossWorktreeOverlap: admission.Block, EnforcementGap: admission.Warn},
	} {
		t.Run(fmt.Sprintf("%s-%s", pol.SameCheckoutConflict, pol.CrossWorktreeOverlap), func(t *testing.T) {
			t.Parallel()
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			runProperty(t, open, pol, rand.New(rand.NewPCG(seed, seed^0x5eed)), steps)
		})
	}
}

var propertyResources = []string{
	"file:a.go", "file:src/b.go", "file:src/c.go", "intent:src/**", "intent:src/b.go", "intent:src",
	"intent:**", "intent:docs/**", "host:port:1", "host:port:2",
}

// modelRes is a resource as the model sees it.
type modelRes struct {
	scope    string
	key      string
	subtree  bool
	checkout string
}

func modelOf(resource, checkout string) modelRes {
	scope, raw, _ := strings.Cut(resource, ":")
	m := modelRes{scope: scope, key: raw, checkout: checkout}
	if scope == "host" {
		m.checkout = ""
	}
	if raw == "**" {
		m.key, m.subtree = "", true
	} else if k, ok := strings.CutSuffix(raw, "/**"); ok {
		m.key, m.subtree = k, true
	}
	return m
}

func modelOfLease(l admission.Lease) modelRes { return modelOf(l.Resource, l.Checkout) }

// modelCovers: does the pattern (key, subtree) include path p?
func modelCovers(key string, subtree bool, p string) bool {
	if !subtree {
		return key == p
	}
	return key == "" || p == key || strings.HasPrefix(p, key+"/")
}

// modelPolicy returns the policy key deciding a conflict of a and b, or "".
func modelPolicy(a, b modelRes) string {
	if a.scope == "host" || b.scope == "host" {
		if a.scope == b.scope && a.key == b.key {
			return admission.PolicyHostSingleton
		}
		return ""
	}
	meet := modelCovers(a.key, a.subtree, b.key) || modelCovers(b.key, b.subtree, a.key)
	if !meet {
		return ""
	}
	if a.checkout == b.checkout {
		return admission.PolicySameCheckoutConflict
	}
	if a.scope == "file" && b.scope == "file" {
		return ""
	}
	return admission.PolicyCrossWorktreeOverlap
}

func runProperty(t *testing.T, open Factory, pol admission.PolicySet, rng *rand.Rand, steps int) {
	e := newEnv(t, open)
	ctx := context.Background()
	for _, k := range admission.ConflictPolicyKeys() {
		if _, err := e.s.SetPolicy(ctx, k, string(pol.Value(k))); err != nil {
			t.Fatal(err)
		}
	}
	holders := []string{"h0", "h1", "h2", "h3"}
	checkouts := []string{e.main.Dir, e.linked.Dir}
	roots := map[string]string{}
	for _, d := range checkouts {
		co, err := admission.OpenCheckout(d)
		if err != nil {
			t.Fatal(err)
		}
		roots[d] = co.Root
	}
	gens := map[modelRes]int64{} // highest generation granted per resource
	seen := map[string]int64{}   // generation of every lease id seen

	for step := range steps {
		before := e.list(false)
		var what string
		switch op := rng.IntN(100); {
		case op < 45: // acquire
			h := holders[rng.IntN(len(holders))]
			dir := checkouts[rng.IntN(len(checkouts))]
			n := 1 + rng.IntN(3)
			var rs []string
			for range n {
				rs = append(rs, propertyResources[rng.IntN(len(propertyResources))])
			}
			ttl := time.Duration(1+rng.IntN(10)) * time.Minute
			what = fmt.Sprintf("acquire %s %v in %s ttl %v", h, rs, dir, ttl)
			res, err := e.s.Acquire(ctx, admission.AcquireRequest{Token: tokenOf(h), Holder: h, Checkout: dir, Resources: rs, TTL: ttl})
			checkAdmission(t, step, what, pol, before, h, roots[dir], rs, res, err)
		case op < 60: // renew
			h := holders[rng.IntN(len(holders))]
			var ids []string
			for _, l := range before {
				if l.Holder == h && rng.IntN(2) == 0 {
					ids = append(ids, l.ID)
				}
			}
			what = fmt.Sprintf("renew %s %v", h, ids)
			_, err := e.s.Renew(ctx, admission.RenewRequest{Token: tokenOf(h), Holder: h, IDs: ids, TTL: time.Duration(1+rng.IntN(10)) * time.Minute})
			if err != nil && !errors.Is(err, admission.ErrQuarantined) && !errors.Is(err, admission.ErrNotFound) {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
		case op < 75: // release
			h := holders[rng.IntN(len(holders))]
			var ids []string
			for _, l := range before {
				if l.Holder == h && rng.IntN(3) == 0 {
					ids = append(ids, l.ID)
				}
			}
			what = fmt.Sprintf("release %s %v", h, ids)
			if _, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf(h), Holder: h, IDs: ids}); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
		case op < 90: // time passes
			d := time.Duration(rng.IntN(6*60)) * time.Second
			what = fmt.Sprintf("advance %v", d)
			e.clock.Advance(d)
		default: // resolve a quarantine
			var q []admission.Lease
			for _, l := range before {
				if l.State == admission.StateQuarantined {
					q = append(q, l)
				}
			}
			if len(q) == 0 {
				continue
			}
			l := q[rng.IntN(len(q))]
			what = "resolve " + l.ID
			if _, err := e.s.Resolve(ctx, admission.ResolveRequest{ID: l.ID, WriterStopped: true}); err != nil {
				t.Fatalf("step %d: %s: %v", step, what, err)
			}
		}

		checkInvariants(t, e, pol, step, what, gens, seen)
	}
}

// checkInvariants checks, from the ledgers, what must hold after every
// step: no pending lease, a lease's generation never changes, a new lease
// of a resource has a higher generation than any before it (gens, seen),
// and no two holders' live leases conflict under a blocking policy.
func checkInvariants(t *testing.T, e *env, pol admission.PolicySet, step int, what string, gens map[modelRes]int64, seen map[string]int64) {
	t.Helper()
	all := e.list(true)
	var live []admission.Lease
	for _, l := range all {
		switch l.State {
		case admission.StatePending:
			t.Fatalf("step %d (%s): pending lease %+v after a finished admission", step, what, l)
		case admission.StateActive, admission.StateQuarantined:
			live = append(live, l)
		}
		m := modelOfLease(l)
		if g, ok := seen[l.ID]; ok {
			if g != l.Generation {
				t.Fatalf("step %d (%s): lease %s changed generation %d -> %d", step, what, l.ID, g, l.Generation)
			}
			continue
		}
		if l.Generation <= gens[m] {
			t.Fatalf("step %d (%s): new lease %s of %s has generation %d, not above %d", step, what, l.ID, l.Resource, l.Generation, gens[m])
		}
		seen[l.ID], gens[m] = l.Generation, l.Generation
	}
	for i, a := range live {
		for _, b := range live[i+1:] {
			if a.Holder == b.Holder {
				continue
			}
			if k := modelPolicy(modelOfLease(a), modelOfLease(b)); k != "" && pol.Value(k) == admission.Block {
				t.Fatalf("step %d (%s): conflicting live grants (%s):\n%+v\n%+v", step, what, k, a, b)
			}
		}
	}
}

// checkAdmission compares an acquire's outcome with the model: granted
// exactly when no live lease blocks a requested resource; quarantined
// when a blocking lease is quarantined.
func checkAdmission(t *testing.T, step int, what string, pol admission.PolicySet, before []admission.Lease, holder, root string,
	rs []string, res *admission.AcquireResult, err error) {
	t.Helper()
	blocked, quarantined := false, false
	for _, r := range rs {
		m := modelOf(r, root)
		for _, l := range before {
			if l.Holder == holder && l.State == admission.StateActive {
				continue
			}
			k := modelPolicy(m, modelOfLease(l))
			if k != "" && pol.Value(k) == admission.Block {
				blocked = true
				quarantined = quarantined || l.State == admission.StateQuarantined
			}
		}
	}
	switch {
	case !blocked && err != nil:
		t.Fatalf("step %d: %s: refused although nothing blocks it: %v", step, what, err)
	case blocked && err == nil:
		t.Fatalf("step %d: %s: granted %+v although the model blocks it", step, what, res.Leases)
	case blocked && quarantined && !errors.Is(err, admission.ErrQuarantined):
		t.Fatalf("step %d: %s: %v, want ErrQuarantined", step, what, err)
	case blocked && !quarantined && !errors.Is(err, admission.ErrHeld):
		t.Fatalf("step %d: %s: %v, want ErrHeld", step, what, err)
	}
}
