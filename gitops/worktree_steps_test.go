package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// addedState is what a test compares between the two ways of adding a
// worktree: what git lists, what status says, the files, and the
// post-checkout hook's arguments and the branch it saw.
type addedState struct {
	Worktree Worktree
	Status   string
	Files    []string
	Hook     string
	Reflog   string
}

func stateOfAdded(t *testing.T, repo *fixtures.Repo, path, hookLog string) addedState {
	t.Helper()
	wts, err := ListWorktrees(ctx, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var s addedState
	for _, w := range wts {
		if w.Path == path {
			s.Worktree = w
			s.Worktree.Path = "NAME"
			s.Worktree.Branch = strings.TrimSuffix(w.Branch, filepath.Base(w.Path))
		}
	}
	s.Status = fixtures.Git(t, path, "status", "--porcelain=v1", "--untracked-files=all", "--ignored")
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		s.Files = append(s.Files, e.Name())
	}
	if b, err := os.ReadFile(hookLog); err == nil {
		s.Hook = strings.ReplaceAll(string(b), filepath.Base(path), "NAME")
		os.Remove(hookLog)
	}
	s.Reflog = strings.ReplaceAll(fixtures.Git(t, path, "reflog", "show", "--format=%gs", "refs/heads/"+filepath.Base(path)), filepath.Base(path), "NAME")
	return s
}

// TestAddWorktreeInStepsLikeGit: with many worktrees AddWorktree runs
// git's steps itself; the worktree, its files, its lock, its branch and
// the post-checkout hook's view are what one `git worktree add --lock -b`
// gives.
func TestAddWorktreeInStepsLikeGit(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	repo.WriteFiles(map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	repo.WriteExecutable("run.sh", "#!/bin/sh\n")
	head := repo.Commit("files")
	hookLog := filepath.Join(fixtures.TempDir(t), "hook.log")
	repo.WriteExecutable(".git/hooks/post-checkout",
		"#!/bin/sh\necho \"$1 $2 $3 $(git symbolic-ref --short HEAD) $(git status --porcelain | wc -l)\" >> '"+hookLog+"'\n")
	base := fixtures.TempDir(t)

	one := filepath.Join(base, "one")
	if err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: one, Branch: "one", Commit: head, LockReason: "reason"}); err != nil {
		t.Fatal(err)
	}
	want := stateOfAdded(t, repo, one, hookLog)

	threshold := 1
	if !manyWorktrees(repo.CommonDir(), head, threshold) {
		t.Fatal("the steps are not taken with the threshold at 1")
	}
	steps := filepath.Join(base, "two")
	if err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: steps, Branch: "two", Commit: head, LockReason: "reason", StepsThreshold: threshold}); err != nil {
		t.Fatal(err)
	}
	got := stateOfAdded(t, repo, steps, hookLog)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the steps differ from git worktree add (-git +steps):\n%s", diff)
	}
	if want.Hook == "" || !strings.Contains(want.Hook, " 1 NAME 0") {
		t.Fatalf("the hook did not run on a clean checkout of the branch: %q", want.Hook)
	}
}

// TestAddWorktreeInStepsRefusals: the steps refuse as git does and leave
// nothing behind where git leaves nothing.
func TestAddWorktreeInStepsRefusals(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	base := fixtures.TempDir(t)
	threshold := 1
	if err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, "first"), Branch: "first", Commit: head, LockReason: "r", StepsThreshold: threshold}); err != nil {
		t.Fatal(err)
	}
	before := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")

	// A branch that exists.
	err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, "again"), Branch: "first", Commit: head, LockReason: "r", StepsThreshold: threshold})
	if !errors.Is(err, ErrBranchExists) {
		t.Fatalf("existing branch: got %v, want ErrBranchExists", err)
	}
	// A path that exists: the new branch is removed again.
	occupied := filepath.Join(base, "occupied")
	if err := os.MkdirAll(filepath.Join(occupied, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err = AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: occupied, Branch: "fresh", Commit: head, LockReason: "r", StepsThreshold: threshold})
	if !errors.Is(err, ErrPathExists) {
		t.Fatalf("existing path: got %v, want ErrPathExists", err)
	}
	if after := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); after != before {
		t.Fatalf("refs changed by refused adds:\n%s\nwant\n%s", after, before)
	}
	if _, err := os.Lstat(filepath.Join(base, "again")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused add left %s", filepath.Join(base, "again"))
	}

	// A failing hook fails the add after the checkout, as git does: the
	// worktree is there, on its branch, for the caller to remove.
	repo.WriteExecutable(".git/hooks/post-checkout", "#!/bin/sh\nexit 3\n")
	hooked := filepath.Join(base, "hooked")
	if err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: hooked, Branch: "hooked", Commit: head, LockReason: "r", StepsThreshold: threshold}); err == nil {
		t.Fatal("a failing post-checkout hook did not fail the add")
	}
	if got := fixtures.Git(t, hooked, "symbolic-ref", "HEAD"); strings.TrimSpace(got) != "refs/heads/hooked" {
		t.Fatalf("after a failing hook HEAD is %q", got)
	}
}

// A path registered to a worktree whose folder is gone (prunable, or
// missing and locked) is refused by the steps as by git: ErrPathExists,
// no branch made, and the other worktree's entry kept as it was.
func TestAddWorktreeInStepsKeepsAMissingWorktreesEntry(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	base := fixtures.TempDir(t)
	threshold := 1
	for _, locked := range []bool{false, true} {
		gone := filepath.Join(base, fmt.Sprintf("gone-%v", locked))
		other := repo.AddWorktree(gone, fmt.Sprintf("other-%v", locked))
		if locked {
			repo.LockWorktree(gone, "on removable media")
		}
		other.Remove("")
		before := repo.Git("worktree", "list", "--porcelain")
		refs := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
		err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: gone, Branch: fmt.Sprintf("new-%v", locked), Commit: head, LockReason: "r", StepsThreshold: threshold})
		if !errors.Is(err, ErrPathExists) {
			t.Fatalf("locked=%v: got %v, want ErrPathExists", locked, err)
		}
		if got := repo.Git("worktree", "list", "--porcelain"); got != before {
			t.Fatalf("locked=%v: git's worktrees changed:\n%s\nwant\n%s", locked, got, before)
		}
		if got := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); got != refs {
			t.Fatalf("locked=%v: refs changed:\n%s\nwant\n%s", locked, got, refs)
		}
	}
}

// TestAddWorktreeCallsEntryMade: AddWorktree calls EntryMade once
// git has made the worktree's entry, both ways (git's add, and the steps,
// where it runs beside the checkout), and returns after it. Its error
// stops the add (in steps, before the branch is made) and is returned,
// the worktree left for the caller to remove; it is never called for an
// add git refuses before making anything.
func TestAddWorktreeCallsEntryMade(t *testing.T) {
	t.Parallel()
	for _, steps := range []bool{false, true} {
		t.Run(fmt.Sprintf("steps=%v", steps), func(t *testing.T) {
			t.Parallel()
			repo := fixtures.NewRepo(t)
			head := repo.Head()
			base := fixtures.TempDir(t)
			threshold := 0 // the default: git's own add
			if steps {
				threshold = 1
				if err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, "first"), Branch: "first", Commit: head, LockReason: "r", StepsThreshold: threshold}); err != nil {
					t.Fatal(err)
				}
			}
			// Called once, with the entry there; its file stays in it.
			path := filepath.Join(base, "made")
			calls := 0
			err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: path, Branch: "made", Commit: head, LockReason: "r", StepsThreshold: threshold, EntryMade: func() error {
				calls++
				admin, err := WorktreeGitDir(path)
				if err != nil {
					return err
				}
				return os.WriteFile(filepath.Join(admin, "caller-file"), []byte("x\n"), 0o644)
			}})
			if err != nil || calls != 1 {
				t.Fatalf("add: %v, entryMade called %d times", err, calls)
			}
			if _, err := os.Stat(filepath.Join(fixtures.AdminDir(t, path), "caller-file")); err != nil {
				t.Errorf("entryMade's file: %v", err)
			}
			if got := strings.TrimSpace(fixtures.Git(t, path, "symbolic-ref", "HEAD")); got != "refs/heads/made" {
				t.Errorf("HEAD %q after the add", got)
			}
			// Its error is the add's, the worktree there for the caller to
			// remove: with the steps, detached and locked, its branch never
			// made.
			boom := errors.New("entry refused")
			failing := filepath.Join(base, "failing")
			err = AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: failing, Branch: "failing", Commit: head, LockReason: "r", StepsThreshold: threshold, EntryMade: func() error { return boom }})
			if !errors.Is(err, boom) {
				t.Errorf("entryMade's error: got %v", err)
			}
			if _, err := os.Stat(filepath.Join(failing, ".git")); err != nil {
				t.Errorf("the worktree is not left for the caller: %v", err)
			}
			if got := branchExists(repo, "failing"); got == steps {
				t.Errorf("branch made: %v (steps %v)", got, steps)
			}
			// Not called when git refuses before making anything.
			occupied := filepath.Join(base, "occupied")
			if err := os.MkdirAll(filepath.Join(occupied, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			calls = 0
			err = AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: occupied, Branch: "fresh", Commit: head, LockReason: "r", StepsThreshold: threshold, EntryMade: func() error { calls++; return nil }})
			if !errors.Is(err, ErrPathExists) || calls != 0 {
				t.Errorf("occupied path: %v, entryMade called %d times", err, calls)
			}
			// A branch that exists: git's add refuses before making
			// anything; the steps make the entry, call entryMade, then
			// remove the worktree. Either way the add's error.
			err = AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, "again"), Branch: "made", Commit: head, LockReason: "r", StepsThreshold: threshold, EntryMade: func() error { return nil }})
			if !errors.Is(err, ErrBranchExists) {
				t.Errorf("existing branch: got %v, want ErrBranchExists", err)
			}
			if _, err := os.Lstat(filepath.Join(base, "again")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused add left %s", filepath.Join(base, "again"))
			}
		})
	}
}
