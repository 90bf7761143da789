package salvage

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// What a salvage runs git on: the worktree it was given, whatever the
// environment, the worktree's own config or a missing .git would aim git
// at (gitops's TestEnvironmentIsolation, TestWritersRefuseNonTopLevel and
// TestWorktreeFunctionsIgnoreWorktreeConfig check its other functions).

// TestSnapshotEnvironmentIsolation: variables inherited from a git hook or
// alias must not aim the salvage at another repository or index. Not
// parallel: it sets the process environment.
func TestSnapshotEnvironmentIsolation(t *testing.T) {
	r := fixtures.NewRepo(t)
	other := fixtures.NewRepo(t)
	r.WriteFile("mine.txt", "x")
	fixtures.LeakGitEnv(t, other)

	res, err := Snapshot(ctx, r.Dir, "m")
	if err != nil || res.Files.Added != 1 {
		t.Fatalf("Snapshot = %+v, %v", res, err)
	}
}

// TestSnapshotRefusesAFakeWorktree: a worktree whose .git is an empty
// directory: git would skip it and walk up to the enclosing repository;
// the ceiling stops it, and nothing changes.
func TestSnapshotRefusesAFakeWorktree(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("tracked.txt", "committed\n")
	r.Commit("c")
	r.WriteFile("tracked.txt", "uncommitted work\n")
	r.WriteFile("sub/untracked.txt", "untracked work\n")
	r.Mkdir("fake/.git")
	r.WriteFile("fake/untracked.txt", "untracked work\n")
	before := fixtures.Files(t, r.Dir)
	head, branch := r.Head(), strings.TrimSpace(r.Git("symbolic-ref", "HEAD"))

	if _, err := Snapshot(ctx, r.Path("fake"), "m"); err == nil {
		t.Errorf("Snapshot of a fake worktree succeeded")
	}
	if got := strings.TrimSpace(r.Git("symbolic-ref", "HEAD")); got != branch || r.Head() != head {
		t.Errorf("HEAD is %s at %s, was %s at %s", got, r.Head(), branch, head)
	}
	if diff := cmp.Diff(before, fixtures.Files(t, r.Dir)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
}

// With core.worktree (or core.bare) in a worktree's own config, git run
// there without being told otherwise acts on another directory (or none).
// Snapshot names the worktree's git dir and work tree, so it salvages the
// worktree it was given, never the main worktree that core.worktree
// names, and changes nothing there.
func TestSnapshotIgnoresWorktreeConfig(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"core.worktree", "core.bare"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			main, ws := fixtures.WorktreeAimedElsewhere(t, key)
			mainBefore := fixtures.Files(t, main.Dir)
			mainStatus := main.StatusBytes()

			snap, err := Snapshot(ctx, ws.Dir, "salvage")
			if err != nil {
				t.Fatal(err)
			}
			if got := main.Blob(snap.Commit, "tracked.txt"); got != "edited in ws\n" {
				t.Errorf("snapshot holds tracked.txt %q, want ws's edit", got)
			}
			if got := main.Blob(snap.Commit, "ws-untracked.txt"); got != "untracked in ws\n" {
				t.Errorf("snapshot holds ws-untracked.txt %q", got)
			}
			if _, err := main.TryGit("cat-file", "blob", snap.Commit+":main-untracked.txt"); err == nil {
				t.Errorf("the snapshot of ws holds the main worktree's untracked file")
			}
			if diff := cmp.Diff(mainBefore, fixtures.Files(t, main.Dir)); diff != "" {
				t.Errorf("the main worktree changed (-before +after):\n%s", diff)
			}
			if got := main.StatusBytes(); got != mainStatus {
				t.Errorf("the main worktree's status changed: %q, was %q", got, mainStatus)
			}
		})
	}
}
