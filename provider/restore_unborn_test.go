package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// A salvage taken while HEAD was an unborn branch (issue 24 item 9): a
// branch made with --orphan, or the workspace's branch deleted under it
// from the main worktree. Restore gives back HEAD on that branch, still
// without a commit, with the index and files as they were, and every
// object reachable before the reclaim reachable after; a branch deleted
// after the salvage is created again at the salvage's HEAD.
func TestRestoreUnbornHead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		make   func(repo, ws *fixtures.Repo) string // returns the branch HEAD names
		branch string                               // RestoreOptions.Branch
	}{
		{"orphan branch", func(repo, ws *fixtures.Repo) string {
			ws.Git("checkout", "--quiet", "--orphan", "fresh")
			return "fresh"
		}, ""},
		{"orphan branch onto a new name", func(repo, ws *fixtures.Repo) string {
			ws.Git("checkout", "--quiet", "--orphan", "fresh")
			return "fresh"
		}, "other"},
		{"branch deleted under it", func(repo, ws *fixtures.Repo) string {
			repo.Git("update-ref", "-d", "refs/heads/majlis/T-1")
			return "majlis/T-1"
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			ws.WriteFile("a.txt", "a\n")
			committed := ws.Commit("a")
			branch := tc.make(repo, ws)
			ws.WriteFile("staged.txt", "staged\n")
			ws.Git("add", "staged.txt")
			ws.WriteFile("staged.txt", "then edited\n")
			ws.WriteFile("untracked.txt", "untracked\n")
			ws.Git("update-ref", "refs/worktree/keep", committed)
			before := observe(t, ws, nil)
			if before.view["HEAD"] != "unborn" {
				t.Fatalf("HEAD is %s, want unborn", before.view["HEAD"])
			}
			// The trash deleted: with the undo window a kept trash is on the
			// unborn branch (TestRestoreUnbornWhileTheTrashIsKept).
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
			if err != nil {
				t.Fatal(err)
			}
			mustReach(t, repo, "the commit the deleted branch was at", committed)
			rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", Branch: tc.branch})
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			want := branch
			if tc.branch != "" {
				want = tc.branch
				before.view["HEAD symbolic"] = "refs/heads/" + want
			}
			if !rr.Unborn || rr.Head != "" || rr.Branch == nil || *rr.Branch != want || rr.SalvageRef != *res.SalvageRef {
				t.Errorf("restore result: unborn %v head %q branch %v ref %s, want unborn on %s from %s", rr.Unborn, rr.Head, rr.Branch, rr.SalvageRef, want, *res.SalvageRef)
			}
			after := observe(t, &fixtures.Repo{T: t, Dir: rr.Workspace.Path}, nil)
			if diff := cmp.Diff(before.view, after.view); diff != "" {
				t.Errorf("restored workspace differs (-before +after):\n%s", diff)
			}
			for id := range before.objects {
				if !after.objects[id] {
					t.Errorf("object %s was reachable before the reclaim, not after the restore", id)
				}
			}
			// The first commit there makes the branch.
			again := &fixtures.Repo{T: t, Dir: rr.Workspace.Path}
			again.Commit("first")
			if _, err := repo.TryGit("rev-parse", "--verify", "refs/heads/"+want); err != nil {
				t.Errorf("a commit in the restored workspace made no branch %s: %v", want, err)
			}
		})
	}
}

// An unborn salvage whose branch exists now is refused, changing nothing;
// onto a new name it is restored.
func TestRestoreUnbornBranchNowExists(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.Git("checkout", "--quiet", "--orphan", "fresh")
	ws.WriteFile("new.txt", "new\n")
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true}); err != nil {
		t.Fatal(err)
	}
	repo.Git("branch", "fresh", "HEAD")
	refs := repo.Git("for-each-ref")
	claims := len(mustReadBinding(t, p, "T-1"))
	_, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if !errors.Is(err, ErrBranchExists) || !strings.Contains(err.Error(), "fresh") {
		t.Fatalf("restore onto an unborn branch that exists now: %v, want ErrBranchExists naming it", err)
	}
	if got := repo.Git("for-each-ref"); got != refs {
		t.Errorf("the refused restore changed refs:\n%s\nwant\n%s", got, refs)
	}
	if n := len(mustReadBinding(t, p, "T-1")); n != claims {
		t.Errorf("the refused restore left a claim (%d claims, were %d)", n, claims)
	}
	rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", Branch: "fresh-2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := (&fixtures.Repo{T: t, Dir: rr.Workspace.Path}).ReadFile("new.txt"); got != "new\n" {
		t.Errorf("new.txt holds %q", got)
	}
}

// A branch deleted after the salvage (HEAD known) is created again at the
// salvage's HEAD.
func TestRestoreBranchDeletedAfterReclaim(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.WriteFile("a.txt", "a\n")
	head := ws.Commit("a")
	ws.WriteFile("dirty.txt", "dirty\n")
	before := observe(t, ws, nil)
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatal(err)
	}
	repo.Git("branch", "-D", "majlis/T-1")
	rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Unborn || rr.Head != head || rr.Branch == nil || *rr.Branch != "majlis/T-1" || repo.RevParse("refs/heads/majlis/T-1") != head {
		t.Errorf("restore: unborn %v head %s branch %v, want majlis/T-1 made again at %s", rr.Unborn, rr.Head, rr.Branch, head)
	}
	after := observe(t, &fixtures.Repo{T: t, Dir: rr.Workspace.Path}, nil)
	if diff := cmp.Diff(before.view, after.view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
}

// With the undo window the kept trash of a workspace whose HEAD had no
// commit stays on that branch: a plain restore of the salvage is refused
// naming the trash (two worktrees on one unborn branch would each take the
// other's first commit for their own); restore from the trash gives it
// all back, and the salvage restores onto a new branch name.
func TestRestoreUnbornWhileTheTrashIsKept(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.Git("checkout", "--quiet", "--orphan", "fresh")
	ws.WriteFile("new.txt", "new\n")
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.TrashPath == "" {
		t.Fatalf("the trash was not kept: %+v", res)
	}
	_, err = p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if !errors.Is(err, ErrBranchExists) || !strings.Contains(err.Error(), res.TrashPath) {
		t.Fatalf("restore while the trash is kept on the unborn branch: %v, want branch_exists naming %s", err, res.TrashPath)
	}
	other, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", Branch: "fresh-2", Path: t.TempDir() + "/again"})
	if err != nil {
		t.Fatal(err)
	}
	if !other.Unborn || (&fixtures.Repo{T: t, Dir: other.Workspace.Path}).ReadFile("new.txt") != "new\n" {
		t.Errorf("restore onto a new name: %+v", other)
	}
}

func mustReadBinding(t *testing.T, p *Provider, binding string) []*claimRecord {
	t.Helper()
	recs, err := p.records.Binding(binding)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
