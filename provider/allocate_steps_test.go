package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// manyWorktreesRepo is a provider on a repository with enough linked
// worktrees (detached and empty: cheap) that git's add runs in steps.
func manyWorktreesRepo(t *testing.T) (*fixtures.Repo, *Provider) {
	t.Helper()
	repo, p := newProvider(t)
	repo.AddWorktreeEntries(fixtures.TempDir(t), 260, repo.Head())
	return repo, p
}

// An allocation that fails after git made the worktree, detached and
// empty, and before its files and branch (the many-worktrees add): the
// undo removes that worktree and the new branch, and the claim is failed,
// so the binding can be allocated again. One killed there is left alone.
func TestAllocateManyWorktreesMidway(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := manyWorktreesRepo(t)
	refsBefore := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
	run := crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=gitops/add-detached=error"}, "workspace", "allocate", "T-1", "--json")
	if run.exit == 0 {
		t.Fatalf("the injected error did not fail the allocation:\n%s", run)
	}
	checkUndone(t, repo, p, "T-1", refsBefore)
	// The binding is free: the same allocation now succeeds, in steps.
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if got := strings.TrimSpace(fixtures.Git(t, ws.Path, "symbolic-ref", "HEAD")); got != "refs/heads/majlis/T-1" {
		t.Fatalf("HEAD of the allocated workspace is %q", got)
	}
	if st := fixtures.Git(t, ws.Path, "status", "--porcelain"); st != "" {
		t.Fatalf("the allocated workspace is not clean:\n%s", st)
	}

	// A process killed at the same point leaves a detached, locked
	// worktree the claim never recorded as created. Once anything but its
	// .git file is in it (files written since), a retry refuses to guess,
	// names the path, and leaves everything as it is.
	run = crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=gitops/add-detached=crash"},
		"workspace", "allocate", "T-2", "--request-id", "req-2", "--json")
	if !run.killed {
		t.Fatalf("not killed at gitops/add-detached:\n%s", run)
	}
	path := filepath.Join(p.reg.WorkspaceRoot, "T-2")
	mine := filepath.Join(path, "mine.txt")
	if err := os.WriteFile(mine, []byte("someone's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refs := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
	again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-2", "--request-id", "req-2", "--json")
	if again.exit == 0 || !strings.Contains(again.stdout+again.stderr, path) {
		t.Fatalf("the retry of the killed allocation did not refuse naming %s:\n%s", path, again)
	}
	if _, err := os.Lstat(filepath.Join(path, ".git")); err != nil {
		t.Fatalf("the retry removed the worktree it could not verify: %v", err)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "someone's\n" {
		t.Fatalf("the file written into the worktree: %q, %v", b, err)
	}
	if got := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); got != refs {
		t.Fatalf("the refused retry changed refs:\n%s\nwant\n%s", got, refs)
	}
}

// Killed at the same point with nothing written since, the worktree holds
// only its .git file: nothing in it can be anyone's, and a retry with the
// same request id finishes the allocation (git's own add, killed with
// majlis, finishes on its own). Then list, doctor and reclaim see an
// ordinary workspace.
func TestAllocateManyWorktreesKilledMidwayResumes(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := manyWorktreesRepo(t)
	repo.WriteFile("f.txt", "f\n")
	repo.Commit("a file")
	run := crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=gitops/add-detached=crash"},
		"workspace", "allocate", "T-1", "--request-id", "req-1", "--json")
	if !run.killed {
		t.Fatalf("not killed at gitops/add-detached:\n%s", run)
	}
	again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-1", "--request-id", "req-1", "--json")
	if again.exit != 0 {
		t.Fatalf("the retry of the allocation killed before its checkout failed:\n%s", again)
	}
	path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
	if b, err := os.ReadFile(filepath.Join(path, "f.txt")); err != nil || string(b) != "f\n" {
		t.Fatalf("f.txt in the resumed workspace: %q, %v", b, err)
	}
	checkResumed(t, bin, repo, path, "T-1", true)
}

// With many worktrees the new entry is pinned while git checks the files
// out. A pin that fails undoes the allocation (no worktree, branch or
// path left; the binding free again). A process killed at the pin, once
// git's checkout beside it has finished, leaves the worktree detached and
// checked out: a retry with the same request id finishes the allocation.
func TestAllocateManyWorktreesPinBesideCheckout(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := manyWorktreesRepo(t)
	refsBefore := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
	run := crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=allocate/pin=error"}, "workspace", "allocate", "T-1", "--json")
	if run.exit == 0 {
		t.Fatalf("the failing pin did not fail the allocation:\n%s", run)
	}
	checkUndone(t, repo, p, "T-1", refsBefore)
	noTemporaryFiles(t, p.records.Dir("T-1"))
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})

	// A post-checkout hook that fails ends the add after the pin and the
	// created event were written: the event is never named, and the
	// allocation is undone and failed.
	hook := filepath.Join(repo.CommonDir(), "hooks", "post-checkout")
	repo.WriteExecutable(".git/hooks/post-checkout", "#!/bin/sh\nexit 3\n")
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-3"}); err == nil {
		t.Fatal("a failing post-checkout hook did not fail the allocation")
	}
	os.Remove(hook)
	noTemporaryFiles(t, p.records.Dir("T-3"))
	if recs, _ := p.records.Binding("T-3"); len(recs) != 1 || !recs[0].has(EventFailed) || recs[0].has(EventCreated) {
		t.Fatalf("records of the failed allocation: %+v", recs)
	}
	if _, err := os.Lstat(filepath.Join(p.reg.WorkspaceRoot, "T-3")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed allocation left its worktree (%v)", err)
	}

	gate := filepath.Join(t.TempDir(), "gate")
	proc := crashStart(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=allocate/pin=wait(" + gate + ")"},
		"workspace", "allocate", "T-2", "--request-id", "req-2", "--json")
	path := filepath.Join(p.reg.WorkspaceRoot, "T-2")
	crashWaitFor(t, "the pin's failpoint and the checkout beside it", 60*time.Second, func() bool {
		if _, err := os.Stat(gate + ".reached"); err != nil {
			return false
		}
		admin := filepath.Join(repo.CommonDir(), "worktrees", "T-2")
		_, lock := os.Stat(filepath.Join(admin, "index.lock"))
		_, index := os.Stat(filepath.Join(admin, "index"))
		return errors.Is(lock, os.ErrNotExist) && index == nil
	})
	proc.cmd.Process.Kill()
	if res := proc.wait(); !res.killed {
		t.Fatalf("not killed at allocate/pin:\n%s", res)
	}
	again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-2", "--request-id", "req-2", "--json")
	if again.exit != 0 {
		t.Fatalf("the retry of the allocation killed at its pin failed:\n%s", again)
	}
	if pin, err := gitops.ReadEntryPin(fixtures.AdminDir(t, path)); err != nil || !strings.HasPrefix(pin, "sha256:") {
		t.Fatalf("pin of the resumed workspace: %q, %v", pin, err)
	}
	checkResumed(t, bin, repo, path, "T-2", false)
}

// noTemporaryFiles fails the test if dir holds a record being written.
func noTemporaryFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// checkUndone fails the test unless the allocation of binding was undone:
// no folder at its path, git's refs as in refsBefore, no worktree listed.
func checkUndone(t *testing.T, repo *fixtures.Repo, p *Provider, binding, refsBefore string) {
	t.Helper()
	path := filepath.Join(p.reg.WorkspaceRoot, binding)
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the undone allocation left %s (%v)", path, err)
	}
	if got := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); got != refsBefore {
		t.Fatalf("refs after the undone allocation:\n%s\nwant\n%s", got, refsBefore)
	}
	wts, err := gitops.ListWorktrees(t.Context(), repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wts {
		if w.Path == path {
			t.Fatalf("git still lists %s: %+v", path, w)
		}
	}
}

// checkResumed fails the test unless the workspace of binding at path,
// finished by a retry, is an ordinary one: on its branch, clean, doctor
// ok; with reclaim, reclaimed by the binary.
func checkResumed(t *testing.T, bin string, repo *fixtures.Repo, path, binding string, reclaim bool) {
	t.Helper()
	if got := strings.TrimSpace(fixtures.Git(t, path, "symbolic-ref", "HEAD")); got != "refs/heads/majlis/"+binding {
		t.Fatalf("HEAD of the resumed workspace is %q", got)
	}
	if st := fixtures.Git(t, path, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("the resumed workspace is not clean:\n%s", st)
	}
	if doc := crashExec(t, bin, repo.Dir, nil, "doctor", "--json"); doc.exit != 0 || !strings.Contains(doc.stdout, `"ok": true`) {
		t.Fatalf("doctor after the resumed allocation:\n%s", doc)
	}
	if !reclaim {
		return
	}
	if rec := crashExec(t, bin, repo.Dir, nil, "workspace", "reclaim", binding, "--yes", "--json"); rec.exit != 0 {
		t.Fatalf("reclaim of the resumed workspace:\n%s", rec)
	}
}
