package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// poolScene is a repository with a pooled worktree at base A and a
// commit B ten files away from A.
func poolScene(t *testing.T, size int) (repo *fixtures.Repo, p *Provider, a, b string) {
	t.Helper()
	repo, p = newProvider(t)
	for i := range 20 {
		repo.WriteFile(fmt.Sprintf("d%d/f%d.txt", i%4, i), fmt.Sprintf("v1 %d\n", i))
	}
	repo.WriteGitignore("*.log")
	a = repo.Commit("A")
	for i := range 8 {
		repo.WriteFile(fmt.Sprintf("d%d/f%d.txt", i%4, i), fmt.Sprintf("v2 %d\n", i))
	}
	repo.Remove("d1/f9.txt")
	repo.WriteFile("new/added.txt", "added\n")
	b = repo.Commit("B")
	if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: size, Base: a}); err != nil {
		t.Fatal(err)
	}
	return repo, p, a, b
}

// treeFiles maps every file under dir (but .git) to its content.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == ".git" {
			return nil
		}
		if fi.IsDir() {
			if rel != "." {
				out[rel+"/"] = ""
			}
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPoolAllocateEqualsFresh: a workspace handed out from the pool at a
// base ten files away equals one git worktree add makes: the same files,
// HEAD on the new branch, git status clean, no untracked or ignored file,
// majlis's lock and pin, the pooled worktree's folder gone; it reclaims
// like any workspace.
func TestPoolAllocateEqualsFresh(t *testing.T) {
	t.Parallel()
	repo, p, _, b := poolScene(t, 1)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if ws.Pool == nil || !ws.Pool.Used {
		t.Fatalf("not taken from the pool: %+v", ws.Pool)
	}
	fresh := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b, NoPool: true})
	if fresh.Pool == nil || fresh.Pool.Used || fresh.Pool.Reason != "disabled" {
		t.Errorf("--no-pool: %+v", fresh.Pool)
	}
	got, want := treeFiles(t, ws.Path), treeFiles(t, fresh.Path)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files differ:\npool  %v\nfresh %v", got, want)
	}
	for _, w := range []*Workspace{ws, fresh} {
		st := strings.TrimSpace(gitOut(t, w.Path, "status", "--porcelain", "--ignored", "-uall"))
		head := strings.TrimSpace(gitOut(t, w.Path, "rev-parse", "HEAD"))
		branch := strings.TrimSpace(gitOut(t, w.Path, "symbolic-ref", "HEAD"))
		if st != "" || head != b || branch != "refs/heads/majlis/"+w.Binding {
			t.Errorf("%s: status %q, HEAD %s on %s", w.Binding, st, head, branch)
		}
		gitDir := strings.TrimSpace(gitOut(t, w.Path, "rev-parse", "--absolute-git-dir"))
		for _, per := range []string{"config.worktree", "refs", "logs/refs", "info/sparse-checkout", "MERGE_HEAD"} {
			if _, err := os.Stat(filepath.Join(gitDir, per)); err == nil {
				t.Errorf("%s: per-worktree %s", w.Binding, per)
			}
		}
	}
	wl := repo.Git("worktree", "list", "--porcelain")
	if !strings.Contains(wl, "worktree "+ws.Path+"\nHEAD "+b+"\nbranch refs/heads/majlis/T-1\nlocked majlis workspace T-1 ") {
		t.Errorf("git's worktrees:\n%s", wl)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 0 {
		t.Errorf("pool after the hand-out: %+v", l.Pool)
	}
	if m, _ := filepath.Glob(filepath.Join(p.reg.WorkspaceRoot, poolFolderPrefix+"*")); len(m) != 0 {
		t.Errorf("pool folders left: %v", m)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("doctor: %+v, %v", rep, err)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true}); err != nil {
		t.Errorf("reclaim of the workspace handed out: %v", err)
	}
	// Empty pool: the next allocation says so.
	if w := mustAllocate(t, p, AllocateOptions{Binding: "T-3"}); w.Pool == nil || w.Pool.Used || w.Pool.Reason != "empty" {
		t.Errorf("empty pool: %+v", w.Pool)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return fixtures.Git(t, dir, args...)
}

// TestPoolTamperedNeverHandedOut: a pooled worktree someone changed is
// never handed out: the allocation sets it aside, falls back to git
// worktree add, and what was written stays.
func TestPoolTamperedNeverHandedOut(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, pool string, repo *fixtures.Repo) string{
		"untracked file": func(t *testing.T, pool string, _ *fixtures.Repo) string { return writeIn(t, pool, "d0/new.txt") },
		"ignored file":   func(t *testing.T, pool string, _ *fixtures.Repo) string { return writeIn(t, pool, "d2/x.log") },
		"modified file":  func(t *testing.T, pool string, _ *fixtures.Repo) string { return writeIn(t, pool, "d3/f3.txt") },
		"head moved": func(t *testing.T, pool string, repo *fixtures.Repo) string {
			gitIn(t, pool, "-c", "core.hooksPath=/dev/null", "checkout", "-q", "--detach", "HEAD~1")
			return filepath.Join(pool, ".git")
		},
		"index changed": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			gitIn(t, pool, "rm", "-q", "--cached", "d0/f0.txt")
			return filepath.Join(pool, "d0/f0.txt")
		},
		"lock removed": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			gitIn(t, pool, "worktree", "unlock", pool)
			return filepath.Join(pool, "d0/f0.txt")
		},
		"same size, mtime set back": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			path := filepath.Join(pool, "d0/f4.txt")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("v9 4\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			return path
		},
		"hard link to a file outside": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			outside := filepath.Join(t.TempDir(), "precious")
			if err := os.WriteFile(outside, []byte("v1 12\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(pool, "d0/f12.txt") // the same at both bases: the switch leaves it
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(outside, path); err != nil {
				t.Fatal(err)
			}
			return outside
		},
		"hard link from outside": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			outside := filepath.Join(t.TempDir(), "other-name")
			if err := os.Link(filepath.Join(pool, "d1/f13.txt"), outside); err != nil {
				t.Fatal(err)
			}
			return outside
		},
		"folder swapped": func(t *testing.T, pool string, _ *fixtures.Repo) string {
			if err := os.Rename(pool, pool+".old"); err != nil {
				t.Fatal(err)
			}
			gitIn(t, pool+".old", "worktree", "repair") // points git's entry at the old folder
			if err := os.MkdirAll(pool, 0o755); err != nil {
				t.Fatal(err)
			}
			return writeIn(t, pool, "other.txt")
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo, p, _, b := poolScene(t, 1)
			l, err := p.PoolList()
			if err != nil {
				t.Fatal(err)
			}
			pool := l.Pool[0].Path
			keep := tamper(t, pool, repo)
			before, _ := os.ReadFile(keep)
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
			if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
				t.Errorf("pool use %+v, want checks_failed", ws.Pool)
			}
			if after, err := os.ReadFile(keep); err != nil || string(after) != string(before) {
				t.Errorf("%s changed: %q, %v", keep, after, err)
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside {
				t.Errorf("pool after: %+v", l)
			}
			rep, err := p.Doctor(t.Context())
			if err != nil || !hasFinding(rep, FindingPoolAside) {
				t.Errorf("doctor does not name it: %+v, %v", rep, err)
			}
		})
	}
}

func hasFinding(rep *DoctorReport, code string) bool {
	for _, f := range rep.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// TestPoolHooks: no hook runs when the pool is filled; post-checkout runs
// once at hand-out, in the workspace, with git worktree add's arguments
// (the null commit, the new HEAD, flag 1).
func TestPoolHooks(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	log := filepath.Join(t.TempDir(), "hook.log")
	repo.WriteExecutable(".git/hooks/post-checkout", "#!/bin/sh\necho \"$1 $2 $3 $(pwd)\" >> "+log+"\n")
	if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(log); err == nil {
		t.Errorf("a hook ran at fill: %q", b)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if !ws.Pool.Used {
		t.Fatalf("not from the pool: %+v", ws.Pool)
	}
	b, _ := os.ReadFile(log)
	want := strings.Repeat("0", len(ws.Base)) + " " + ws.Base + " 1 " + ws.Path + "\n"
	if string(b) != want {
		t.Errorf("post-checkout ran with %q, want %q", b, want)
	}
}

// TestPoolCheckoutExistingBranch: allocate --checkout of an existing
// branch takes a pooled worktree too: switched to the branch's tip, HEAD
// on the branch, which majlis neither moves nor deletes (undo included).
func TestPoolCheckoutExistingBranch(t *testing.T) {
	t.Parallel()
	repo, p, _, b := poolScene(t, 1)
	repo.Git("branch", "feature", b)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", CheckoutBranch: "feature"})
	if !ws.Pool.Used {
		t.Fatalf("not from the pool: %+v", ws.Pool)
	}
	if br := strings.TrimSpace(gitOut(t, ws.Path, "symbolic-ref", "HEAD")); br != "refs/heads/feature" {
		t.Errorf("HEAD on %s", br)
	}
	if st := strings.TrimSpace(gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall")); st != "" {
		t.Errorf("status %q", st)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true}); err != nil {
		t.Fatal(err)
	}
	if got := repo.RevParse("feature"); got != b {
		t.Errorf("feature moved to %s", got)
	}
}

// TestPoolFailingHookUndoes: a post-checkout hook that fails at hand-out
// undoes the allocation as after git worktree add (no workspace, no
// branch); the pooled worktree went with it, and a drain retires its
// claim.
func TestPoolFailingHookUndoes(t *testing.T) {
	t.Parallel()
	repo, p, _, b := poolScene(t, 1)
	repo.WriteExecutable(".git/hooks/post-checkout", "#!/bin/sh\nexit 1\n")
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", Base: b}); err == nil {
		t.Fatal("allocate succeeded with a failing hook")
	}
	if _, err := os.Lstat(filepath.Join(p.reg.WorkspaceRoot, "T-1")); !os.IsNotExist(err) {
		t.Errorf("the workspace path: %v", err)
	}
	if out, _ := repo.TryGit("rev-parse", "--verify", "-q", "refs/heads/majlis/T-1"); out != "" {
		t.Errorf("branch left: %s", out)
	}
	if rep, _ := p.Doctor(t.Context()); !hasFinding(rep, FindingPoolAside) {
		t.Errorf("doctor: %+v", rep.Findings)
	}
	if res, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(res.Drained) != 1 || len(res.Pool) != 0 {
		t.Errorf("drain: %+v, %v", res, err)
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("%d worktrees", n)
	}
}

// TestPoolWrittenDuringFillNeverHandedOut: files written into a pooled
// worktree while its fill was making it (after git's checkout, before
// its stamp) are not stamped as clean: the hand-out sees them, sets it
// aside, and what was written stays.
func TestPoolWrittenDuringFillNeverHandedOut(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	repo.WriteFile("d0/f0.txt", "v1\n")
	repo.WriteGitignore("*.log")
	base := repo.Commit("A")
	for name, write := range map[string]string{"ignored": "d0/x.log", "modified": "d0/f0.txt"} {
		m, err := p.fillOne(t.Context(), base, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		keep := writeIn(t, m.rec.Claim.Path, write)
		before, _ := os.ReadFile(keep)
		// the write landed before the fill took the stamp
		if m.stamp, err = stampOf(m.rec, m.entry, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.readyPooled(t.Context(), []*pooledMade{m}, false); err != nil {
			t.Fatal(err)
		}
		ws := mustAllocate(t, p, AllocateOptions{Binding: "T-" + name, Base: base})
		if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
			t.Errorf("%s: pool use %+v, want checks_failed", name, ws.Pool)
		}
		if after, err := os.ReadFile(keep); err != nil || string(after) != string(before) {
			t.Errorf("%s: %s changed: %q, %v", name, keep, after, err)
		}
	}
}
