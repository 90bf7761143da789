package admission

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/gitops"
)

func countEvents(t *testing.T, e *env, kind string) int {
	t.Helper()
	var n int
	if err := e.s.repo.db.QueryRow(`SELECT count(*) FROM events WHERE kind = ?`, kind).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.main.WriteFiles(map[string]string{"src/old.go": "x\n", "docs/a.md": "a\n", "keep.txt": "k\n"})
	e.main.Commit("files")
	// Changes: a modified tracked file, an untracked file under an
	// intent, a rename (both sides count), an uncovered untracked file.
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

	res, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Path("src"), Holder: "a", Changed: changedIn(t, e.main.Path("src"))})
	if err != nil {
		t.Fatal(err)
	}
	wantGaps := []string{"docs/b.md", "lib/moved.go"}
	if diff := cmp.Diff(wantGaps, res.Gaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	if res.Changed != 5 || res.Policy != Warn || !slices.Equal(res.DecidedBy, []string{PolicyEnforcementGap}) {
		t.Errorf("result = %+v", res)
	}
	if len(res.Warnings) != 2 || res.Warnings[0].Code != "enforcement_gap" || res.Warnings[0].Policy != PolicyEnforcementGap {
		t.Errorf("warnings = %+v", res.Warnings)
	}
	if n := countEvents(t, e, "enforcement_gap"); n != 2 {
		t.Errorf("%d enforcement_gap events, want 2", n)
	}

	// allow: no report, the events are still recorded.
	e.s.SetPolicy(ctx, PolicyEnforcementGap, "allow")
	res, err = e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)})
	if err != nil || len(res.Gaps) != 0 || len(res.Warnings) != 0 || res.Policy != Allow {
		t.Fatalf("allow: %+v, %v", res, err)
	}
	if n := countEvents(t, e, "enforcement_gap"); n != 4 {
		t.Errorf("%d enforcement_gap events, want 4", n)
	}

	// block: refused, with the gaps.
	e.s.SetPolicy(ctx, PolicyEnforcementGap, "block")
	_, err = e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)})
	ae := wantErr(t, err, ErrPolicyBlocked)
	if diff := cmp.Diff(wantGaps, ae.Gaps); diff != "" {
		t.Errorf("blocked gaps (-want +got):\n%s", diff)
	}

	// Covered by a file lease on each side: no gap. Expired leases cover
	// nothing.
	e.mustAcquire("a", "", "file:lib/moved.go")
	if _, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)}); err == nil {
		t.Fatal("docs/b.md is leased to other, yet a's check passed")
	}
	e.s.Release(ctx, ReleaseRequest{Token: tokenOf("other"), Holder: "other"})
	e.mustAcquire("a", "", "file:docs/b.md")
	if _, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)}); err != nil {
		t.Fatalf("fully covered: %v", err)
	}
	e.clock.Advance(time.Hour)
	if _, err := e.s.Check(ctx, CheckRequest{Checkout: e.main.Dir, Holder: "a", Changed: changedIn(t, e.main.Dir)}); err == nil {
		t.Fatal("expired leases covered the changes")
	}
}

func TestPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	p, err := e.s.Policy(ctx)
	if err != nil || p != DefaultPolicy() {
		t.Fatalf("default policy: %+v, %v", p, err)
	}
	if p.SameCheckoutConflict != Block || p.CrossWorktreeOverlap != Warn || p.EnforcementGap != Warn {
		t.Fatalf("defaults = %+v", p)
	}
	p, err = e.s.SetPolicy(ctx, PolicyCrossWorktreeOverlap, "block")
	if err != nil || p.CrossWorktreeOverlap != Block || p.SameCheckoutConflict != Block {
		t.Fatalf("set: %+v, %v", p, err)
	}
	for _, kv := range [][2]string{{"nope", "warn"}, {PolicyHostSingleton, "allow"}, {PolicyEnforcementGap, "maybe"}, {"", ""}} {
		_, err := e.s.SetPolicy(ctx, kv[0], kv[1])
		wantErr(t, err, ErrInvalid)
	}
	e.s.Close()
	e.s = e.open()
	if p, _ := e.s.Policy(ctx); p.CrossWorktreeOverlap != Block {
		t.Fatalf("policy after reopening: %+v", p)
	}
	if n := countEvents(t, e, "policy"); n != 1 {
		t.Errorf("%d policy events, want 1", n)
	}
	// A value this majlis does not know makes the ledger untrustworthy.
	if _, err := e.s.repo.db.Exec(`UPDATE policy SET value = 'sometimes'`); err != nil {
		t.Fatal(err)
	}
	_, err = e.s.Policy(ctx)
	wantErr(t, err, ErrMalformed)
	_, err = e.acquire("a", "", "file:x")
	wantErr(t, err, ErrMalformed)
}

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
