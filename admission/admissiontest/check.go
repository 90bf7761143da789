package admissiontest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
)

// changedIn lists the changed paths of the worktree containing dir, as the
// CLI gathers them for Check.
func changedIn(t *testing.T, dir string) []string {
	t.Helper()
	st, err := gitops.ReadStatus(t.Context(), dir, gitops.StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st.ChangedPaths()
}

func (e *env) check(dir string) (*admission.CheckResult, error) {
	e.t.Helper()
	return e.s.Check(context.Background(), admission.CheckRequest{Checkout: dir, Holder: "a", Changed: changedIn(e.t, dir)})
}

// testCheck: changed paths outside the holder's active leases in that
// checkout are gaps, and the enforcement_gap policy decides.
func testCheck(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	e.main.WriteFiles(map[string]string{"src/old.go": "x\n", "docs/a.md": "a\n", "keep.txt": "k\n"})
	e.main.Commit("files")
	e.main.WriteFile("keep.txt", "changed\n")
	e.main.WriteFile("src/new/x.go", "new\n")
	e.main.Mkdir("lib")
	e.main.Git("mv", "src/old.go", "lib/moved.go")
	e.main.WriteFile("docs/b.md", "b\n")
	// Leases of other holders, of this holder in another checkout, and
	// expired ones cover nothing.
	e.mustAcquire("a", "", "file:keep.txt", "intent:src/**")
	e.mustAcquire("other", "", "file:docs/b.md")
	e.mustAcquire("a", e.linked.Dir, "intent:docs/**")

	res, err := e.check(e.main.Path("src"))
	if err != nil {
		t.Fatal(err)
	}
	wantGaps := []string{"docs/b.md", "lib/moved.go"}
	if diff := cmp.Diff(wantGaps, res.Gaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	if res.Changed != 5 || res.Policy != admission.Warn || !slices.Equal(res.DecidedBy, []string{admission.PolicyEnforcementGap}) {
		t.Errorf("result = %+v", res)
	}
	if len(res.Warnings) != 2 || res.Warnings[0].Code != "enforcement_gap" || res.Warnings[0].Policy != admission.PolicyEnforcementGap {
		t.Errorf("warnings = %+v", res.Warnings)
	}

	if _, err := e.s.SetPolicy(ctx, admission.PolicyEnforcementGap, "allow"); err != nil {
		t.Fatal(err)
	}
	res, err = e.check(e.main.Dir)
	if err != nil || len(res.Gaps) != 0 || len(res.Warnings) != 0 || res.Policy != admission.Allow {
		t.Fatalf("allow: %+v, %v", res, err)
	}

	if _, err := e.s.SetPolicy(ctx, admission.PolicyEnforcementGap, "block"); err != nil {
		t.Fatal(err)
	}
	_, err = e.check(e.main.Dir)
	ae := wantErr(t, err, admission.ErrPolicyBlocked)
	if diff := cmp.Diff(wantGaps, ae.Gaps); diff != "" {
		t.Errorf("blocked gaps (-want +got):\n%s", diff)
	}

	e.mustAcquire("a", "", "file:lib/moved.go")
	if _, err := e.check(e.main.Dir); err == nil {
		t.Fatal("docs/b.md is leased to other, yet a's check passed")
	}
	if _, err := e.s.Release(ctx, admission.ReleaseRequest{Token: tokenOf("other"), Holder: "other"}); err != nil {
		t.Fatal(err)
	}
	e.mustAcquire("a", "", "file:docs/b.md")
	if _, err := e.check(e.main.Dir); err != nil {
		t.Fatalf("fully covered: %v", err)
	}
	e.clock.Advance(time.Hour)
	if _, err := e.check(e.main.Dir); err == nil {
		t.Fatal("expired leases covered the changes")
	}

	// A linked worktree is checked against the leases in that worktree.
	e.linked.WriteFile("src/a.go", "a\n")
	_, err = e.check(e.linked.Dir)
	ae = wantErr(t, err, admission.ErrPolicyBlocked)
	if !slices.Equal(ae.Gaps, []string{"src/a.go"}) {
		t.Fatalf("linked worktree: %+v", ae.Gaps)
	}
	e.mustAcquire("a", e.linked.Dir, "intent:src/**")
	if res, err = e.check(e.linked.Dir); err != nil || len(res.Gaps) != 0 {
		t.Fatalf("linked worktree, covered: %+v, %v", res, err)
	}
}

// testPolicy: defaults, changes, refusals, and a policy that outlives the
// backend instance that set it.
func testPolicy(t *testing.T, open Factory) {
	e := newEnv(t, open)
	ctx := context.Background()
	p, err := e.s.Policy(ctx)
	if err != nil || p != admission.DefaultPolicy() {
		t.Fatalf("default policy: %+v, %v", p, err)
	}
	if p.SameCheckoutConflict != admission.Block || p.CrossWorktreeOverlap != admission.Warn || p.EnforcementGap != admission.Warn {
		t.Fatalf("defaults = %+v", p)
	}
	p, err = e.s.SetPolicy(ctx, admission.PolicyCrossWorktreeOverlap, "block")
	if err != nil || p.CrossWorktreeOverlap != admission.Block || p.SameCheckoutConflict != admission.Block {
		t.Fatalf("set: %+v, %v", p, err)
	}
	for _, kv := range [][2]string{{"nope", "warn"}, {admission.PolicyHostSingleton, "allow"}, {admission.PolicyEnforcementGap, "maybe"}, {"", ""}} {
		_, err := e.s.SetPolicy(ctx, kv[0], kv[1])
		wantErr(t, err, admission.ErrInvalid)
	}
	again := open(t, e.state, e.clock.Now)
	defer again.Close()
	if p, err := again.Policy(ctx); err != nil || p.CrossWorktreeOverlap != admission.Block {
		t.Fatalf("policy seen by another instance: %+v, %v", p, err)
	}
}
