package provider

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// TestPurgeLeavesPeersInsideKeptTrash: a kept trash folder is a folder a
// person can open, and what they put in it is not the workspace's: a
// repository initialised there (its commits and objects live only in it),
// a worktree added there (its untracked files are its own). No salvage of
// the workspace can keep those, so the purge refuses, as a reclaim does
// (peer_overlap, naming the peer and what to do), deletes nothing and
// records no purge; once the peer is moved out, the next purge goes ahead.
func TestPurgeLeavesPeersInsideKeptTrash(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
	r1, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-2", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	trash1 := &fixtures.Repo{T: t, Dir: r1.TrashPath}
	nested := trash1.NestedRepo("nested")
	nested.WriteFile("only-here.txt", "committed only in the nested repository\n")
	made := nested.Commit("made in a repository inside the kept trash")
	inner := repo.AddWorktree(r2.TrashPath+"/inner", "inner")
	inner.WriteFile("inner-notes.txt", "untracked in a worktree inside the kept trash\n")
	files1, files2 := crashCaptureFiles(t, r1.TrashPath), crashCaptureFiles(t, r2.TrashPath)

	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Purged) != 0 || len(purged.Left) != 2 {
		t.Fatalf("purge: %+v, want both kept trash folders left", purged)
	}
	for _, l := range purged.Left {
		if !strings.Contains(l.Reason, "nothing was deleted") || !strings.Contains(l.Reason, "move it out of the trash folder") {
			t.Errorf("left %s: %q, want it to say nothing was deleted and what to do", l.Binding, l.Reason)
		}
	}
	if !strings.Contains(purged.Left[0].Reason, "nested") || !strings.Contains(purged.Left[1].Reason, "inner") {
		t.Errorf("the reasons do not name the peers: %+v", purged.Left)
	}
	if diff := cmp.Diff(files1, crashCaptureFiles(t, r1.TrashPath)); diff != "" {
		t.Errorf("the kept trash with a nested repository changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(files2, crashCaptureFiles(t, r2.TrashPath)); diff != "" {
		t.Errorf("the kept trash with a worktree inside changed (-before +after):\n%s", diff)
	}
	if got := nested.Head(); got != made {
		t.Errorf("the nested repository's HEAD is %s, want %s", got, made)
	}
	for _, b := range []string{"T-1", "T-2"} {
		if rec, _ := p.claimOf(b, 1); rec.has(EventPurging) || rec.has(EventPurged) {
			t.Errorf("%s: a purge was recorded: %v", b, rec.Events)
		}
	}
	_, err = p.purgeKept(t.Context(), "T-1", 1, DueExpired)
	if !errors.Is(err, ErrPeerOverlap) {
		t.Errorf("purge of the trash holding a repository: %v, want peer_overlap", err)
	}

	// Moved out, they no longer hold the purge back.
	if err := os.Rename(nested.Dir, fixtures.TempDir(t)+"/nested"); err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "move", inner.Dir, fixtures.TempDir(t)+"/inner")
	if purged, err = p.PurgeDue(t.Context()); err != nil || len(purged.Purged) != 2 || len(purged.Left) != 0 {
		t.Fatalf("purge once the peers are out: %+v, %v", purged, err)
	}
}
