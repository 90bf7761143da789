package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/reservation"
)

// newProvider makes a repository with one commit, registers it and opens it.
func newProvider(t *testing.T) (*fixtures.Repo, *Provider) {
	t.Helper()
	repo := fixtures.NewRepo(t)
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return repo, p
}

func mustAllocate(t *testing.T, p *Provider, o AllocateOptions) *Workspace {
	t.Helper()
	ws, err := p.Allocate(t.Context(), o)
	if err != nil {
		t.Fatalf("allocate %s: %v", o.Binding, err)
	}
	return ws
}

func worktreeCount(t *testing.T, repo *fixtures.Repo) int {
	return strings.Count(repo.Git("worktree", "list", "--porcelain"), "worktree ")
}

func TestInitIsIdempotentFromAnyWorktree(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	again, err := Init(t.Context(), ws.Path, InitOptions{}) // from the linked worktree
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != p.reg.ID || again.CommonDir != repo.CommonDir() {
		t.Errorf("init from a linked worktree: %+v, want id %s", again, p.reg.ID)
	}
	if _, err := Init(t.Context(), repo.Dir, InitOptions{WorkspaceRoot: t.TempDir()}); !errors.Is(err, ErrAlreadyInit) {
		t.Errorf("init with another root: %v, want ErrAlreadyInit", err)
	}
	if want := filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces"); p.reg.WorkspaceRoot != want {
		t.Errorf("workspace root %s, want %s", p.reg.WorkspaceRoot, want)
	}
}

func TestAllocatePublishesClaimThenWorktree(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Intent: []string{"src/auth/**", "go.mod"}})
	recs, err := p.records.Binding("T-1")
	if err != nil || len(recs) != 1 {
		t.Fatalf("claims: %v, %v", recs, err)
	}
	c := recs[0].Claim
	if c.Path != ws.Path || c.Base != repo.Head() || c.Branch != "majlis/T-1" || c.CommonDir != repo.CommonDir() ||
		c.RepositoryID != p.reg.ID || c.Allocator.PID != os.Getpid() || len(c.Intent) != 2 {
		t.Errorf("claim does not describe the workspace: %+v", c)
	}
	if recs[0].Digest != ws.ClaimDigest || !recs[0].has(EventCreated) {
		t.Errorf("digest %s / created %v", recs[0].Digest, recs[0].has(EventCreated))
	}
	list := repo.Git("worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+ws.PhysicalPath) || !strings.Contains(list, "locked majlis workspace T-1") {
		t.Errorf("worktree not registered and locked:\n%s", list)
	}
	if ws.Head != repo.Head() || ws.State != StateActive {
		t.Errorf("workspace %+v", ws)
	}
}

// A failure after the claim leaves no worktree, directory or branch, marks
// the claim failed and frees the binding.
func TestAllocateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	hook := filepath.Join(repo.CommonDir(), "hooks", "post-checkout")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho hook refuses >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1"})
	if err == nil {
		t.Fatal("allocate succeeded despite the failing hook")
	}
	path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory left behind: %v", err)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("%d worktrees registered, want 1", n)
	}
	if out := repo.Git("branch", "--list", "majlis/T-1"); out != "" {
		t.Errorf("branch left behind: %q", out)
	}
	recs, _ := p.records.Binding("T-1")
	if len(recs) != 1 || !recs[0].has(EventFailed) {
		t.Fatalf("claim not marked failed: %+v", recs)
	}
	os.Remove(hook)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if recs, _ := p.records.Binding("T-1"); len(recs) != 2 || ws.ClaimDigest != recs[1].Digest {
		t.Errorf("the second allocation did not get claim #2")
	}
}

// While a reclaim reservation is held, allocation refuses a path inside its
// target; unrelated allocations proceed.
func TestAllocateRefusesReservedTarget(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	l, err := p.leases.Acquire(t.Context(), reservation.Request{Resource: reclaimPrefix + "T-1", Purpose: "reclaim", TTL: time.Minute,
		Metadata: map[string]string{"binding": "T-1", "path": target.Path, "physical_path": target.PhysicalPath}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = p.Allocate(t.Context(), AllocateOptions{Binding: "T-2", Path: filepath.Join(target.Path, "sub"), AllowNested: true})
	if !errors.Is(err, ErrReserved) {
		t.Fatalf("allocation inside a reserved target: %v, want ErrReserved", err)
	}
	if _, err := os.Lstat(filepath.Join(target.Path, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused allocation created something")
	}
	mustAllocate(t, p, AllocateOptions{Binding: "T-3"})
	if ws, _ := p.List(t.Context(), ListOptions{}); ws[0].State != StateReclaiming {
		t.Errorf("T-1 state %s, want reclaiming", ws[0].State)
	}
}

func TestAllocateRefusesOverlapWithClaims(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	for _, tc := range []struct {
		name string
		o    AllocateOptions
		want error
	}{
		{"inside a workspace", AllocateOptions{Binding: "B", Path: filepath.Join(a.Path, "x")}, ErrNested},
		{"through a symlink", AllocateOptions{Binding: "C", Path: ""}, ErrNested},
		{"same path", AllocateOptions{Binding: "D", Path: a.Path}, ErrPathExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if tc.name == "through a symlink" {
				link := filepath.Join(t.TempDir(), "alias")
				if err := os.Symlink(a.Path, link); err != nil {
					t.Fatal(err)
				}
				o.Path = filepath.Join(link, "inner")
			}
			if _, err := p.Allocate(t.Context(), o); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// Allowed nesting works and is recorded.
	b := mustAllocate(t, p, AllocateOptions{Binding: "E", Path: filepath.Join(a.Path, "nested"), AllowNested: true})
	if recs, _ := p.records.Binding("E"); !recs[0].Claim.AllowNested || b.Path != filepath.Join(a.Path, "nested") {
		t.Errorf("nested allocation not recorded")
	}
}

// Eight processes allocating eight bindings all succeed; eight allocating
// one binding: exactly one succeeds, the others are refused as live.
func TestConcurrentAllocations(t *testing.T) {
	t.Parallel()
	t.Run("different bindings", func(t *testing.T) {
		repo, p := newProvider(t)
		var kids []*fixtures.Helper
		for i := range 8 {
			kids = append(kids, startChild(t, "allocate", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=T-"+string(rune('a'+i))))
		}
		for _, k := range kids {
			if r := result(k); !r.OK {
				t.Errorf("allocation failed: %s", r.Err)
			}
		}
		if n := worktreeCount(t, repo); n != 9 {
			t.Errorf("%d worktrees, want 9", n)
		}
		if ws, err := p.List(t.Context(), ListOptions{}); err != nil || len(ws) != 8 {
			t.Errorf("list: %d workspaces, %v", len(ws), err)
		}
	})
	t.Run("one binding", func(t *testing.T) {
		repo, p := newProvider(t)
		var kids []*fixtures.Helper
		for range 8 {
			kids = append(kids, startChild(t, "allocate", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=T-1"))
		}
		wins := 0
		for _, k := range kids {
			r := result(k)
			if r.OK {
				wins++
			} else if r.Code != "binding_live" {
				t.Errorf("loser got %s: %s", r.Code, r.Err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d allocations won, want 1", wins)
		}
		if n := worktreeCount(t, repo); n != 2 {
			t.Errorf("%d worktrees, want 2", n)
		}
		if recs, _ := p.records.Binding("T-1"); len(recs) != 1 {
			t.Errorf("%d claims published, want 1", len(recs))
		}
	})
}

// An allocator killed after publishing its claim blocks the binding; a
// retry with its request id finishes the allocation.
func TestInterruptedAllocationResumes(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
	k := startChild(t, "claim-and-die", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=T-1", "MAJLIS_PATH="+path,
		"MAJLIS_REQUEST=req-7", "MAJLIS_BASE="+repo.Head())
	k.Wait()
	// The list does not call it reclaimable: reclaim would not find it.
	listed, err := p.List(t.Context(), ListOptions{Look: true})
	if err != nil || len(listed) != 1 || listed[0].Reclaimable == nil || *listed[0].Reclaimable ||
		len(listed[0].BlockedBy) == 0 || listed[0].BlockedBy[0].Kind != BlockUnfinished || !strings.Contains(listed[0].BlockedBy[0].Detail, "req-7") {
		t.Fatalf("list of an unfinished allocation: %v %+v", err, listed)
	}
	_, err = p.Allocate(t.Context(), AllocateOptions{Binding: "T-1"})
	var pe *Error
	if !errors.Is(err, ErrBindingLive) || !strings.Contains(err.Error(), "request id resumes") || !errors.As(err, &pe) || pe.Details["unfinished_request"] != "req-7" {
		t.Fatalf("allocate over an interrupted claim: %v", err)
	}
	ws, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", RequestID: "req-7", Path: path})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if ws.Path != path || ws.Head != repo.Head() {
		t.Errorf("resumed workspace %+v", ws)
	}
	again, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", RequestID: "req-7", Path: path})
	if err != nil || again.ClaimDigest != ws.ClaimDigest {
		t.Errorf("retry after success: %v", err)
	}
}

// A malformed record stays local (damage_test.go): list shows its binding
// as damaged, and other allocations proceed when its place is known, and
// refuse when it is not (no journal, no majlis lock on git's entry). An
// entry among the bindings that is no binding at all still refuses both.
func TestMalformedInventory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, p *Provider)
	}{
		{"truncated claim", func(t *testing.T, p *Provider) {
			f := filepath.Join(p.records.Dir("T-1"), claimName(1, "claim"))
			b, _ := os.ReadFile(f)
			os.WriteFile(f, b[:len(b)/2], 0o644)
		}},
		{"unknown claim format", func(t *testing.T, p *Provider) {
			f := filepath.Join(p.records.Dir("T-1"), claimName(1, "claim"))
			b, _ := os.ReadFile(f)
			os.WriteFile(f, []byte(strings.Replace(string(b), formatClaim, "majlis.claim/9", 1)), 0o644)
		}},
		{"garbage in the claims folder", func(t *testing.T, p *Provider) {
			os.WriteFile(filepath.Join(p.records.Dir("T-1"), "notes.txt"), []byte("hi"), 0o644)
		}},
		{"garbage binding folder", func(t *testing.T, p *Provider) {
			os.WriteFile(filepath.Join(p.stateDir, "claims", ".DS_Store"), nil, 0o644)
		}},
		{"forged event", func(t *testing.T, p *Provider) {
			f := filepath.Join(p.records.Dir("T-1"), claimName(1, "released"))
			os.WriteFile(f, []byte(`{"event":{},"sha256":"00"}`), 0o644)
		}},
	} {
		for _, located := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/located=%v", tc.name, located), func(t *testing.T) {
				repo, p := newProvider(t)
				ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
				if !located {
					os.Remove(p.records.JournalPath())
					repo.Git("worktree", "unlock", ws.Path)
				}
				tc.damage(t, p)
				// The claim itself verifies when only an event or a stray
				// file is damaged: its place is then known from it.
				claimOK := tc.name == "garbage in the claims folder" || tc.name == "forged event"
				strict := tc.name == "garbage binding folder"
				list, err := p.List(t.Context(), ListOptions{})
				switch {
				case strict:
					if !errors.Is(err, ErrMalformed) {
						t.Errorf("list: %v, want ErrMalformed", err)
					}
				case err != nil || len(list) != 1 || list[0].State != StateDamaged:
					t.Errorf("list: %+v, %v; want T-1 damaged", list, err)
				}
				_, err = p.Allocate(t.Context(), AllocateOptions{Binding: "T-2"})
				refused := strict || !located && !claimOK
				if refused != errors.Is(err, ErrMalformed) || !refused && err != nil {
					t.Errorf("allocate: %v, want refused %v", err, refused)
				}
				if _, serr := os.Lstat(filepath.Join(p.reg.WorkspaceRoot, "T-2")); refused && !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("refused allocation created its directory")
				}
			})
		}
	}
}

func FuzzUnsealClaim(f *testing.F) {
	good, _, _ := seal("claim", &Claim{Format: formatClaim, Binding: "T-1", Seq: 1, RequestID: "r", Path: "/a",
		PhysicalPath: "/a", CommonDir: "/c", RepositoryID: "x", Base: "b", Branch: "majlis/T-1", Intent: []string{},
		CreatedAt: time.Unix(1, 0).UTC()})
	f.Add(good)
	f.Add([]byte(`{"claim":{},"sha256":""}`))
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Claim
		digest, err := unseal(data, "claim", formatClaim, &c)
		if err != nil {
			return
		}
		if c.check() != nil {
			t.Fatalf("accepted an invalid claim")
		}
		again, d2, err := seal("claim", &c)
		if err != nil {
			t.Fatal(err)
		}
		var c2 Claim
		if d3, err := unseal(again, "claim", formatClaim, &c2); err != nil || d3 != d2 {
			t.Fatalf("re-sealed claim refused: %v", err)
		}
		_ = digest
	})
}

// An allocation of an existing branch (--checkout) that fails after its
// claim, or whose allocator dies, never deletes or moves that branch:
// majlis did not create it.
func TestCheckoutBranchIsNeverDeleted(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	repo.Git("branch", "feature")
	repo.Git("commit", "-q", "--allow-empty", "-m", "second")
	tip := strings.TrimSpace(repo.Git("rev-parse", "feature"))

	hook := filepath.Join(repo.CommonDir(), "hooks", "post-checkout")
	os.MkdirAll(filepath.Dir(hook), 0o755)
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho hook refuses >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "F-1", CheckoutBranch: "feature"}); err == nil {
		t.Fatal("allocate succeeded despite the failing hook")
	}
	if got := strings.TrimSpace(repo.Git("rev-parse", "feature")); got != tip {
		t.Fatalf("after a failed allocation feature is %q, want %q", got, tip)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("%d worktrees registered, want 1", n)
	}
	os.Remove(hook)

	// The allocator dies after its claim: the resume checks the branch out,
	// and deletes nothing.
	path := filepath.Join(p.reg.WorkspaceRoot, "F-2")
	k := startChild(t, "claim-and-die", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=F-2", "MAJLIS_PATH="+path,
		"MAJLIS_REQUEST=req-8", "MAJLIS_BASE="+tip, "MAJLIS_CHECKOUT=feature")
	k.Wait()
	ws, err := p.Allocate(t.Context(), AllocateOptions{Binding: "F-2", RequestID: "req-8", Path: path, CheckoutBranch: "feature"})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if ws.Branch != "feature" || ws.Head != tip || strings.TrimSpace(repo.Git("rev-parse", "feature")) != tip {
		t.Errorf("resumed workspace %+v; feature at %s, want %s", ws, repo.Git("rev-parse", "feature"), tip)
	}
	recs, _ := p.records.Binding("F-2")
	if len(recs) != 1 || !recs[0].Claim.Checkout {
		t.Errorf("the claim does not record the checkout: %+v", recs)
	}
}

// An allocator killed while git was checking the files out leaves the
// worktree on its branch with no index (git writes it last): a retry
// refuses to call that allocation finished, and leaves it as it is.
func TestInterruptedCheckoutNotFinished(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
	k := startChild(t, "claim-and-die", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=T-1", "MAJLIS_PATH="+path,
		"MAJLIS_REQUEST=req-7", "MAJLIS_BASE="+repo.Head())
	k.Wait()
	// What git had done when it was stopped: the branch, the entry, HEAD,
	// no files and no index.
	repo.Git("worktree", "add", "--quiet", "--no-checkout", "-b", "majlis/T-1", path, repo.Head())
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", RequestID: "req-7", Path: path})
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), path) {
		t.Fatalf("resume over a checkout without its index: %v, want interrupted naming %s", err, path)
	}
	recs, err := p.records.Binding("T-1")
	if err != nil || len(recs) != 1 || recs[0].has(EventCreated) {
		t.Fatalf("the claim was changed: %v %+v", err, recs)
	}
	if _, err := os.Lstat(filepath.Join(path, ".git")); err != nil {
		t.Fatalf("the worktree was removed: %v", err)
	}
	// Checked out (as git would have finished it), the retry finishes.
	fixtures.Git(t, path, "reset", "--quiet", "--hard")
	ws, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", RequestID: "req-7", Path: path})
	if err != nil || ws.Head != repo.Head() {
		t.Fatalf("resume after the checkout: %v %+v", err, ws)
	}
}

// TestAllocateRefusesPathInsideGitWorktreeByAnotherName: the nesting check
// of git's own worktrees (not majlis workspaces, whose claims are checked
// apart) sees a worktree that holds the path under another name of a
// folder: a symbolic link into the worktree, a worktree registered through
// a symbolic link, and one registered through a link that leads into the
// path, which does not exist yet. A worktree whose folder is gone and one
// elsewhere do not stop an allocation.
func TestAllocateRefusesPathInsideGitWorktreeByAnotherName(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(real, "plain")
	repo.Git("worktree", "add", "--quiet", "--detach", plain, "HEAD")
	if err := os.Symlink(plain, filepath.Join(root, "to-plain")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "to-real")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "to-real", "linked")
	repo.Git("worktree", "add", "--quiet", "--detach", linked, "HEAD")
	gone := filepath.Join(root, "gone")
	repo.Git("worktree", "add", "--quiet", "--detach", gone, "HEAD")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	// git records a worktree's path resolved; record the linked one as it
	// was named, as an older git or a repair by hand leaves it.
	for _, w := range []string{linked} {
		admin := fixtures.AdminDir(t, w)
		if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(w, ".git")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct{ name, path string }{
		{"through a link into a worktree", filepath.Join(root, "to-plain", "inner")},
		{"inside a worktree registered through a link", filepath.Join(real, "linked", "inner")},
		{"inside a worktree by its resolved name", filepath.Join(real, "plain", "inner")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := repo.Git("worktree", "list", "--porcelain")
			_, err := p.Allocate(t.Context(), AllocateOptions{Binding: fmt.Sprintf("N-%d", i), Path: tc.path})
			if !errors.Is(err, ErrNested) {
				t.Fatalf("allocate at %s: %v, want ErrNested", tc.path, err)
			}
			if after := repo.Git("worktree", "list", "--porcelain"); after != before {
				t.Errorf("a refused allocation changed git's worktrees:\n%s", cmp.Diff(before, after))
			}
			if _, err := os.Lstat(tc.path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused allocation made %s", tc.path)
			}
		})
	}
	mustAllocate(t, p, AllocateOptions{Binding: "apart", Path: filepath.Join(root, "apart")})
	mustAllocate(t, p, AllocateOptions{Binding: "beside", Path: filepath.Join(real, "beside")})
}

// A kept trash takes whatever is inside it along when it is restored or
// purged: no workspace may be made inside it, even with AllowNested.
func TestAllocateInsideKeptTrashRefused(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	kept := reclaimYes(t, p, "T-1", ReclaimOptions{KeepTrash: time.Hour})
	if kept.TrashPath == "" {
		t.Fatal("the reclaim kept no trash")
	}
	path := filepath.Join(kept.TrashPath, "inner")
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-3", Path: path, AllowNested: true})
	if !errors.Is(err, ErrNested) || !strings.Contains(err.Error(), "kept trash of workspace T-1") {
		t.Fatalf("allocate inside the kept trash: %v; want ErrNested naming the kept trash of T-1", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the refused allocation left %s: %v", path, err)
	}
}
