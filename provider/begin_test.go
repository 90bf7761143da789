package provider

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/pathid"
)

func openAdmission(t *testing.T, p *Provider) *admission.Service {
	t.Helper()
	svc, err := p.Admission(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func leaseIDs(ls []admission.Lease) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}

func mustBegin(t *testing.T, p *Provider, o BeginOptions) *BeginResult {
	t.Helper()
	res, err := p.Begin(t.Context(), o)
	if err != nil {
		t.Fatalf("begin %s: %v", o.Task, err)
	}
	return res
}

func TestBegin(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)

	// A workspace, and its intent leases in its checkout.
	t1 := mustBegin(t, p, BeginOptions{Task: "T-1", Paths: []string{"src/auth/**", "README.md"}})
	if t1.Workspace == nil || t1.Workspace.Binding != "T-1" || t1.Checkout != t1.Workspace.Path {
		t.Fatalf("begin T-1: %+v", t1)
	}
	if diff := cmp.Diff([]string{"src/auth/**", "README.md"}, t1.Workspace.Intent); diff != "" {
		t.Errorf("workspace intent (-want +got):\n%s", diff)
	}
	phys, _ := pathid.Physical(t1.Workspace.Path)
	var got []string
	for _, l := range t1.Leases {
		got = append(got, l.Resource)
		if l.Holder != "T-1" || l.Checkout != phys || l.State != admission.StateActive {
			t.Errorf("lease %+v: want holder T-1, active, in %s", l, phys)
		}
	}
	if diff := cmp.Diff([]string{"intent:src/auth/**", "intent:README.md"}, got); diff != "" {
		t.Errorf("leases (-want +got):\n%s", diff)
	}
	if len(t1.Warnings) != 0 || t1.RequestID == "" || t1.Replayed {
		t.Errorf("begin T-1: warnings %v, request id %q, replayed %v", t1.Warnings, t1.RequestID, t1.Replayed)
	}

	// An overlapping intent in another workspace: a warning.
	t2 := mustBegin(t, p, BeginOptions{Task: "T-2", Paths: []string{"src/**"}})
	if len(t2.Warnings) != 1 || t2.Warnings[0].Policy != admission.PolicyCrossWorktreeOverlap || t2.Warnings[0].Lease.Holder != "T-1" {
		t.Errorf("begin T-2 over T-1's intent: warnings %+v, want one cross_worktree_overlap naming T-1", t2.Warnings)
	}

	// Shared: the current checkout, no workspace; a second overlapping
	// task there is refused (same_checkout_conflict), and allocates nothing.
	s1 := mustBegin(t, p, BeginOptions{Task: "S-1", Paths: []string{"docs/**"}, Shared: true})
	if s1.Workspace != nil || s1.Checkout != repo.Dir || len(s1.Leases) != 1 {
		t.Errorf("begin --shared S-1: %+v", s1)
	}
	_, err := p.Begin(t.Context(), BeginOptions{Task: "S-2", Paths: []string{"docs/api/**"}, Shared: true})
	var be *BeginError
	if !errors.Is(err, admission.ErrHeld) || errors.As(err, &be) {
		t.Errorf("begin --shared S-2 over S-1: %v, want admission.ErrHeld without a workspace", err)
	}
	if _, err := p.Show(t.Context(), "S-2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a shared begin allocated a workspace: %v", err)
	}
}

func TestBeginRefusedAfterAllocationResumes(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	svc := openAdmission(t, p)
	mustBegin(t, p, BeginOptions{Task: "T-1", Paths: []string{"src/**"}})
	if _, err := svc.SetPolicy(t.Context(), admission.PolicyCrossWorktreeOverlap, "block"); err != nil {
		t.Fatal(err)
	}

	o := BeginOptions{Task: "T-2", Paths: []string{"src/auth/login.go"}, RequestID: "job-2", Token: "begin-test-token-0123456789"}
	_, err := p.Begin(t.Context(), o)
	var be *BeginError
	if !errors.Is(err, admission.ErrHeld) || !errors.As(err, &be) {
		t.Fatalf("begin T-2 under block: %v, want a BeginError wrapping admission.ErrHeld", err)
	}
	if be.Workspace == nil || be.Workspace.Binding != "T-2" || be.RequestID != "job-2" {
		t.Fatalf("BeginError: %+v", be)
	}
	if _, err := os.Stat(be.Workspace.Path); err != nil {
		t.Fatalf("the workspace should be left in place: %v", err)
	}
	if leases, err := svc.List(t.Context(), admission.ListRequest{Holder: "T-2"}); err != nil || len(leases) != 0 {
		t.Fatalf("a refused begin granted %v (%v)", leases, err)
	}

	// Other arguments under the same request id: refused before anything.
	for _, other := range []BeginOptions{
		{Task: "T-2", Paths: []string{"src/auth/**"}, RequestID: "job-2"},
		{Task: "T-2", Paths: []string{"src/auth/login.go"}, RequestID: "job-2", Shared: true},
		{Task: "T-2", Paths: []string{"src/auth/login.go"}, RequestID: "job-2", TTL: 3600e9},
	} {
		if _, err := p.Begin(t.Context(), other); !errors.Is(err, ErrRequestConflict) {
			t.Errorf("begin %+v under a used request id: %v, want ErrRequestConflict", other, err)
		}
	}

	// Once the conflict is gone, the same request resumes: same workspace.
	if _, err := svc.SetPolicy(t.Context(), admission.PolicyCrossWorktreeOverlap, "warn"); err != nil {
		t.Fatal(err)
	}
	res := mustBegin(t, p, o)
	if res.Workspace.ID != be.Workspace.ID || res.Replayed || len(res.Leases) != 1 || len(res.Warnings) != 1 {
		t.Fatalf("resumed begin: %+v (workspace %+v), want workspace %s, one lease, one warning", res, res.Workspace, be.Workspace.ID)
	}
	// And again: the recorded result, nothing new.
	again := mustBegin(t, p, o)
	if !again.Replayed || again.Workspace.ID != res.Workspace.ID || !cmp.Equal(leaseIDs(again.Leases), leaseIDs(res.Leases)) {
		t.Errorf("replayed begin: %+v, want the leases %v replayed", again, leaseIDs(res.Leases))
	}
	// A replay must present the same lease token.
	without := o
	without.Token = ""
	if _, err := p.Begin(t.Context(), without); !errors.Is(err, admission.ErrRequestConflict) {
		t.Errorf("replayed begin without its lease token: %v, want a request conflict", err)
	}
}

func TestBeginRefusesBadArgumentsBeforeAllocating(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	for _, o := range []BeginOptions{
		{Task: "T-1"},
		{Task: "T-1", Paths: []string{"src/*.go"}},
		{Task: "T-1", Paths: []string{"../up/**"}},
		{Task: "T-1", Paths: []string{"/abs/**"}},
		{Task: "T-1", Paths: []string{"src/**"}, TTL: -1},
		{Task: "T-1", Paths: []string{"src/**"}, TTL: 100000 * time.Hour},
		{Task: "T-1", Paths: []string{"src/**"}, Shared: true, Base: "HEAD"},
		{Task: "bad/task", Paths: []string{"src/**"}},
		{Task: "T-1", Paths: []string{".git/**"}},
		{Task: "T-1", Paths: []string{"src/.GIT/config"}},
	} {
		_, err := p.Begin(t.Context(), o)
		if !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrInvalidBinding) && !errors.Is(err, admission.ErrInvalid) &&
			!errors.Is(err, admission.ErrUnsafePath) {
			t.Errorf("begin %+v: %v, want an invalid-argument refusal", o, err)
		}
	}
	// A begin that failed before any effect binds nothing to its request id.
	if _, err := p.Begin(t.Context(), BeginOptions{Task: "T-1", Paths: []string{"src/**"}, Base: "no-such-ref", RequestID: "r-1"}); !errors.Is(err, ErrUnknownBase) {
		t.Errorf("begin at an unknown base: %v, want ErrUnknownBase", err)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("refused begins left %d worktrees, want only the main one", n)
	}
	if _, err := os.Stat(filepath.Join(p.stateDir, "requests")); err == nil {
		entries, _ := os.ReadDir(filepath.Join(p.stateDir, "requests"))
		if len(entries) != 0 {
			t.Errorf("refused begins recorded requests: %v", entries)
		}
	}
	mustBegin(t, p, BeginOptions{Task: "T-1", Paths: []string{"src/**"}, RequestID: "r-1"})
}

func TestCheckFindsTheHolder(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	t1 := mustBegin(t, p, BeginOptions{Task: "T-1", Paths: []string{"src/**"}})
	os.MkdirAll(filepath.Join(t1.Workspace.Path, "src"), 0o755)
	os.WriteFile(filepath.Join(t1.Workspace.Path, "src", "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(t1.Workspace.Path, "notes.txt"), []byte("outside\n"), 0o644)

	inWS, err := Open(t.Context(), filepath.Join(t1.Workspace.Path, "src"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inWS.Close()
	res, err := inWS.Check(t.Context(), CheckOptions{DefaultHolder: "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Holder != "T-1" || res.HolderSource != HolderWorkspace || !cmp.Equal(res.Gaps, []string{"notes.txt"}) {
		t.Errorf("check in T-1's workspace: holder %q from %q, gaps %v; want T-1 from the workspace, gap notes.txt",
			res.Holder, res.HolderSource, res.Gaps)
	}
	if res, err := inWS.Check(t.Context(), CheckOptions{Holder: "other"}); err != nil || res.HolderSource != HolderGiven ||
		!cmp.Equal(res.Gaps, []string{"notes.txt", "src/a.go"}) {
		t.Errorf("check --holder other: %+v, %v", res, err)
	}

	// The main worktree is no workspace: the default holder, else a refusal.
	repo.WriteFile("x.txt", "x\n")
	if res, err := p.Check(t.Context(), CheckOptions{DefaultHolder: "H"}); err != nil || res.Holder != "H" || res.HolderSource != HolderDefault {
		t.Errorf("check with a default holder: %+v, %v", res, err)
	}
	if _, err := p.Check(t.Context(), CheckOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("check without any holder: %v, want ErrInvalidArgument", err)
	}
	if res, err := p.Check(t.Context(), CheckOptions{IfHolder: true}); err != nil || !res.Skipped || res.Changed != 0 {
		t.Errorf("check --if-holder without any holder: %+v, %v; want skipped", res, err)
	}
}
