package provider

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/wire"
)

// TestPoolClaimFormat: a pooled worktree's claim is sealed as
// majlis.claim/2, which this majlis reads and an older one (a reader
// asking for majlis.claim/1 only) refuses, naming both formats; kinds and
// formats that do not go together refuse.
func TestPoolClaimFormat(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	name := res.Created[0].Name
	path := filepath.Join(p.records.Dir(name), claimName(1, "claim"))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Claim
	if _, err := readRecord(path, "claim", formatClaim, &c); err != nil || c.Kind != ClaimKindPool || c.Format != formatClaim2 {
		t.Fatalf("this majlis reads %+v, %v", c, err)
	}
	// The previous majlis: durable.Unseal asked for majlis.claim/1.
	_, _, err = durable.Unseal(data, "claim", formatClaim, &Claim{})
	if err == nil || !strings.Contains(err.Error(), `unknown format "majlis.claim/2" (this majlis reads "majlis.claim/1")`) {
		t.Errorf("the previous reader: %v, want the unknown format named", err)
	}
	for _, bad := range []Claim{
		func() Claim { d := c; d.Format = formatClaim; return d }(),            // a kind in a /1 claim
		func() Claim { d := c; d.Kind = ""; return d }(),                       // a /2 claim without a kind
		func() Claim { d := c; d.Kind = "spare"; return d }(),                  // a kind this majlis does not know
		func() Claim { d := c; d.Detached, d.Branch = false, "x"; return d }(), // a pooled worktree on a branch
	} {
		sealed, _, err := seal("claim", &bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unseal(sealed, "claim", formatClaim, &Claim{}); err == nil {
			t.Errorf("claim %s kind %q read without error", bad.Format, bad.Kind)
		}
	}
}

// TestPoolFillListDrain: fill makes ready, locked, detached worktrees with
// claims that list --all and the peers see; allocation never takes a pool
// name nor a path inside one; drain deletes them, keeping --keep.
func TestPoolFillListDrain(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 2 || len(res.Pool) != 2 {
		t.Fatalf("fill: %+v", res)
	}
	for _, w := range res.Pool {
		if w.State != wire.PoolReady || w.Base != repo.Head() || !strings.HasPrefix(filepath.Base(w.Path), poolFolderPrefix) ||
			filepath.Dir(w.Path) != p.reg.WorkspaceRoot {
			t.Errorf("pooled worktree %+v", w)
		}
	}
	wl := repo.Git("worktree", "list", "--porcelain")
	if n := strings.Count(wl, "detached\nlocked majlis workspace "+poolBindingPrefix); n != 2 {
		t.Errorf("git's worktrees:\n%s", wl)
	}
	// A second fill to the same size makes nothing.
	if again, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 2}); err != nil || len(again.Created) != 0 {
		t.Errorf("fill again: %+v, %v", again, err)
	}
	list, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(list) != 2 || list[0].State != StatePooled {
		t.Errorf("list --all: %v, %v", list, err)
	}
	looked, err := p.List(t.Context(), ListOptions{All: true, Look: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range looked {
		if w.Reclaimable != nil {
			t.Errorf("list --all says pooled worktree %s is reclaimable (%v): reclaim does not take it", w.Binding, *w.Reclaimable)
		}
	}
	if list, _ := p.List(t.Context(), ListOptions{}); len(list) != 0 {
		t.Errorf("list shows pooled worktrees: %v", list)
	}
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: res.Pool[0].Name}); err == nil {
		t.Error("a workspace was allocated under a pool name")
	}
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", Path: filepath.Join(res.Pool[0].Path, "sub"), AllowNested: true}); err == nil {
		t.Error("a workspace was allocated inside a pooled worktree")
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: res.Pool[0].Name}); err == nil {
		t.Error("a pooled worktree was reclaimed as a workspace")
	}
	drained, err := p.PoolDrain(t.Context(), PoolDrainOptions{Keep: 1})
	if err != nil || len(drained.Drained) != 1 || len(drained.Pool) != 1 || drained.Drained[0].Name != res.Pool[0].Name {
		t.Fatalf("drain --keep 1: %+v, %v", drained, err)
	}
	if _, err := os.Lstat(res.Pool[0].Path); !os.IsNotExist(err) {
		t.Errorf("the drained worktree is still there: %v", err)
	}
	if drained, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(drained.Drained) != 1 || len(drained.Pool) != 0 {
		t.Fatalf("drain: %+v, %v", drained, err)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("%d worktrees left, want the main one", n)
	}
}

// TestPoolDrainLeavesTampered: a drain deletes a pooled worktree only
// when it is still clean and majlis's; each tampering leaves it (and sets
// it aside), with every file in place.
func TestPoolDrainLeavesTampered(t *testing.T) {
	t.Parallel()
	tamper := map[string]func(t *testing.T, path string) string{
		"untracked file": func(t *testing.T, path string) string { return writeIn(t, path, "new.txt") },
		"ignored file":   func(t *testing.T, path string) string { return writeIn(t, path, "x.log") },
		"modified file": func(t *testing.T, path string) string {
			return writeIn(t, path, "README.md")
		},
		"foreign lock": func(t *testing.T, path string) string {
			gitIn(t, path, "worktree", "unlock", path)
			gitIn(t, path, "worktree", "lock", "--reason", "mine", path)
			return filepath.Join(path, "README.md")
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo, p := newProvider(t)
			repo.WriteGitignore("*.log")
			repo.Commit("ignore logs")
			res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1})
			if err != nil {
				t.Fatal(err)
			}
			keep := f(t, res.Pool[0].Path)
			drained, err := p.PoolDrain(t.Context(), PoolDrainOptions{})
			if err != nil || len(drained.Drained) != 0 || len(drained.Left) != 1 {
				t.Fatalf("drain: %+v, %v", drained, err)
			}
			if _, err := os.Lstat(keep); err != nil {
				t.Errorf("%s: %v", keep, err)
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside {
				t.Errorf("after the drain: %+v", l)
			}
		})
	}
}

func writeIn(t *testing.T, dir, rel string) string {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.WriteFile(path, []byte("someone's work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
