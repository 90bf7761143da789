package provider

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestRestoreFromTrashOfAKeptEntry: the workspace's folder was gone at
// its reclaim, so only git's entry was kept. restore --from-trash
// answered "only a reclaim that keeps its trash can be undone", though
// the reclaim named a kept trash. It says the folder was already gone,
// and names the salvage, whose restore brings back what the entry held.
func TestRestoreFromTrashOfAKeptEntry(t *testing.T) {
	t.Parallel()
	repo, p, _ := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	staged := ws.PartialStage("README.md", "staged, then the folder went\n", "in the folder\n")
	if err := os.RemoveAll(w.Path); err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil || res.SalvageRef == nil {
		t.Fatalf("reclaim: %+v, %v", res, err)
	}
	_, err = p.RestoreFromTrash(t.Context(), "T-1", "")
	var pe *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &pe) || pe.Details["salvage_ref"] != *res.SalvageRef || pe.Details["kept_entry"] == nil ||
		!strings.Contains(err.Error(), "already gone") || strings.Contains(err.Error(), "only a reclaim that keeps its trash") {
		t.Fatalf("restore --from-trash: %v, want not_found saying the folder was already gone and naming %s", err, *res.SalvageRef)
	}
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
		t.Fatalf("restore of the salvage the refusal names: %v", err)
	}
	mustReach(t, repo, "the staged blob", staged)
}

// TestRestoreTwiceSaysWhatRestoreCanDo: a second restore of a binding
// restored already answered binding_live with allocate's hint ("use
// another binding"), which a restore cannot follow. It names the
// workspace there and its reclaim first.
func TestRestoreTwiceSaysWhatRestoreCanDo(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
		t.Fatal(err)
	}
	_, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	var pe *Error
	if !errors.Is(err, ErrBindingLive) || !errors.As(err, &pe) || pe.Op != "restore" || pe.Details["restore_live"] != true ||
		strings.Contains(pe.Hint, "another binding") || !strings.Contains(pe.Hint, "reclaim it first") || !strings.Contains(pe.Hint, w.Path) {
		t.Fatalf("second restore: %v, want binding_live with a hint a restore can follow", err)
	}
}

// TestKeptTrashLockedBySomeoneElse: a kept trash folder someone locked
// (git worktree lock --reason X) is left by the purge and refused by
// restore --from-trash, rightly; the refusal named the workspace's old
// path and "reclaim again". It names the trash folder, and what waits
// for the unlock.
func TestKeptTrashLockedBySomeoneElse(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "unlock", res.TrashPath)
	repo.Git("worktree", "lock", "--reason", "keep it, says Ana", res.TrashPath)
	files := crashCaptureFiles(t, res.TrashPath)
	for _, op := range []string{"restore", "purge"} {
		var err error
		if op == "restore" {
			_, err = p.RestoreFromTrash(t.Context(), "T-1", "")
		} else {
			clk.Add(DefaultTrashKeep + time.Second)
			var purged *PurgeResult
			if purged, err = p.PurgeDue(t.Context()); err == nil && len(purged.Left) == 1 {
				_, err = p.purgeKept(t.Context(), "T-1", 1, DueExpired)
			}
		}
		var pe *Error
		if !errors.Is(err, ErrLocked) || !errors.As(err, &pe) || pe.Path != res.TrashPath || !strings.Contains(pe.Hint, "git worktree unlock "+res.TrashPath) ||
			strings.Contains(pe.Hint, "reclaim again") || strings.Contains(err.Error(), res.Path+"'") {
			t.Errorf("%s: %v, want locked naming the trash folder and what to run", op, err)
		}
	}
	if got := crashCaptureFiles(t, res.TrashPath); len(got) != len(files) {
		t.Errorf("the locked trash changed: %d files, was %d", len(got), len(files))
	}
}

// TestKeptTrashFolderMovedByHand: a kept trash folder renamed by hand
// gave restore --from-trash a raw lstat error, list a size of "0 B", and
// doctor nothing. restore names the path, why and what to do; list says
// the folder is gone; doctor reports it (trash_missing) with what to run.
func TestKeptTrashFolderMovedByHand(t *testing.T) {
	t.Parallel()
	repo, p, _ := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	moved := res.TrashPath + ".mine"
	if err := os.Rename(res.TrashPath, moved); err != nil {
		t.Fatal(err)
	}
	_, err = p.RestoreFromTrash(t.Context(), "T-1", "")
	var pe *Error
	if !errors.Is(err, ErrMissing) || !errors.As(err, &pe) || pe.Path != res.TrashPath || pe.Details["trash_gone"] != true ||
		strings.Contains(err.Error(), "lstat") || !strings.Contains(pe.Hint, "move it back to "+res.TrashPath) {
		t.Fatalf("restore --from-trash: %v, want workspace_missing naming the trash folder and what to do", err)
	}
	list, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(list) != 1 || !list[0].TrashMissing || list[0].TrashSizeBytes != nil {
		t.Fatalf("list --all: %+v, %v: want the trash folder said gone, with no size", list, err)
	}
	rep, err := Doctor(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Code == FindingTrashMissing && f.Path == res.TrashPath && strings.Contains(f.Fix, "move it back") {
			found = true
		}
	}
	if !found {
		t.Errorf("doctor: %+v, want trash_missing naming %s", rep.Findings, res.TrashPath)
	}
	// Moved back, it is restored.
	if err := os.Rename(moved, res.TrashPath); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RestoreFromTrash(t.Context(), "T-1", ""); err != nil {
		t.Fatalf("restore --from-trash once moved back: %v", err)
	}
}
