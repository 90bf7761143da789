package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestPurgeOfAKeptTrashMovedByHand: a kept trash folder moved away by
// hand (to rescue it, say) and used there: a commit on its detached HEAD,
// a staged file, a per-worktree ref. Its purge finds the folder gone and
// deletes git's entry of it, which alone holds those: the entry is
// salvaged first, so that every commit and staged blob stays reachable,
// and a restore of the purge's salvage brings them back.
func TestPurgeOfAKeptTrashMovedByHand(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(fixtures.TempDir(t), "rescued")
	if err := os.Rename(res.TrashPath, moved); err != nil {
		t.Fatal(err)
	}
	used := &fixtures.Repo{T: t, Dir: moved}
	used.WriteFile("src/rescued.go", "package app // committed in the moved trash\n")
	made := used.Commit("made in the kept trash, moved by hand")
	used.Git("update-ref", "refs/worktree/rescued", made)
	used.WriteFile("staged.txt", "staged in the moved trash\n")
	used.Git("add", "staged.txt")
	staged := used.RevParse(":staged.txt")
	reach := reachable(t, repo)

	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Purged) != 1 || len(purged.Left) != 0 || purged.Purged[0].SalvageRef == "" {
		t.Fatalf("purge: %+v, want it purged with a salvage of git's entry", purged)
	}
	ref := purged.Purged[0].SalvageRef
	after := reachable(t, repo)
	for id := range reach {
		if !after[id] {
			t.Errorf("commit %s was reachable before the purge, not after", id)
		}
	}
	if out, err := repo.TryGit("rev-list", "--objects", ref); err != nil || !strings.Contains(out, staged) {
		t.Errorf("the staged blob %s is not on %s: %v", staged, ref, err)
	}
	restored, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatalf("restore of %s: %v", ref, err)
	}
	ws := &fixtures.Repo{T: t, Dir: restored.Workspace.Path}
	if got := ws.Head(); got != made {
		t.Errorf("restored HEAD %s, want the commit made in the moved trash %s", got, made)
	}
	if got := ws.RevParse(":staged.txt"); got != staged {
		t.Errorf("restored index has staged.txt at %s, want %s", got, staged)
	}
	if got := ws.RevParse("refs/worktree/rescued"); got != made {
		t.Errorf("restored refs/worktree/rescued at %s, want %s", got, made)
	}
}

// TestPurgeLeavesAKeptTrashAttachedElsewhere: a kept trash folder moved by
// hand and attached again where it is (git worktree repair) is a worktree
// someone uses: the purge leaves it, salvages nothing, records nothing,
// and says where it is and what to do.
func TestPurgeLeavesAKeptTrashAttachedElsewhere(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(fixtures.TempDir(t), "attached")
	if err := os.Rename(res.TrashPath, moved); err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "repair", moved)
	refs := repo.Git("for-each-ref")
	files := crashCaptureFiles(t, moved)

	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Purged) != 0 || len(purged.Left) != 1 || !strings.Contains(purged.Left[0].Reason, moved) ||
		!strings.Contains(purged.Left[0].Reason, "nothing was deleted") {
		t.Fatalf("purge: %+v, want it left, naming %s", purged, moved)
	}
	if got := repo.Git("for-each-ref"); got != refs {
		t.Errorf("refs changed:\n%s\nwant\n%s", got, refs)
	}
	if rec, _ := p.claimOf("T-1", 1); rec.has(EventPurging) || rec.has(EventPurged) {
		t.Errorf("a purge was recorded: %v", rec.Events)
	}
	if _, err := (&fixtures.Repo{T: t, Dir: moved}).TryGit("status"); err != nil {
		t.Errorf("the attached worktree is broken: %v", err)
	}
	if len(crashCaptureFiles(t, moved)) != len(files) {
		t.Errorf("the attached worktree's files changed")
	}
}
