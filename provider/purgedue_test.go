package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestPurgeLeftFreesNothing: the oldest kept trash, due for the budget,
// is left by the purge (a repository inside it: peer_overlap). It used to
// count as freed all the same, so the budget looked met and the younger
// trash was kept while the kept trash together stayed over
// trash.max_bytes. Now only what was deleted counts: the younger one
// goes, and the oldest stays whole.
func TestPurgeLeftFreesNothing(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	var trash []string
	for _, b := range []string{"T-1", "T-2"} {
		mustAllocate(t, p, AllocateOptions{Binding: b})
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: b, Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		trash = append(trash, res.TrashPath)
	}
	nested := (&fixtures.Repo{T: t, Dir: trash[0]}).NestedRepo("nested")
	nested.WriteFile("only-here.txt", "committed only in the nested repository\n")
	made := nested.Commit("made inside the oldest kept trash")
	kept, err := p.KeptTrash(t.Context())
	if err != nil || len(kept) != 2 || kept[1].SizeBytes <= 0 {
		t.Fatalf("kept trash %+v, %v", kept, err)
	}
	// The budget holds the younger alone: the oldest is due.
	if _, err := p.SetTrashPolicy(PolicyTrashMaxBytes, fmt.Sprint(kept[1].SizeBytes)); err != nil {
		t.Fatal(err)
	}
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Left) != 1 || purged.Left[0].Binding != "T-1" || len(purged.Purged) != 1 || purged.Purged[0].Binding != "T-2" || purged.Purged[0].Due != DueBudget {
		t.Fatalf("purge: %+v, want T-1 left (a repository inside) and T-2 purged for the budget", purged)
	}
	if got := nested.Head(); got != made {
		t.Errorf("the nested repository's HEAD is %s, want %s", got, made)
	}
}

// TestPurgeLeftNamesItsSalvage: a purge that salvaged what changed in a
// kept trash and then stopped before deleting anything (a server's stop)
// reported the trash left with salvage_ref "", though that salvage is
// named nowhere else. The left entry names it.
func TestPurgeLeftNamesItsSalvage(t *testing.T) {
	t.Parallel()
	_, p, clk := undoProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	(&fixtures.Repo{T: t, Dir: res.TrashPath}).WriteFile("after.txt", "written in the kept trash after the reclaim\n")
	clk.Add(DefaultTrashKeep + 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p.hook = func(_ context.Context, point string) {
		if point == "purge/salvaged" {
			cancel()
		}
	}
	purged, err := p.PurgeDue(ctx)
	p.hook = nil
	if err == nil || len(purged.Left) != 1 {
		t.Fatalf("purge stopped after its salvage: %+v, %v", purged, err)
	}
	ref := purged.Left[0].SalvageRef
	if !strings.HasPrefix(ref, SalvagePrefix+"T-1/") {
		t.Fatalf("left %+v: want the salvage the purge made named", purged.Left[0])
	}
	repo := &fixtures.Repo{T: t, Dir: res.TrashPath}
	if got := repo.Git("show", ref+":after.txt"); !strings.Contains(got, "after the reclaim") {
		t.Errorf("%s holds %q", ref, got)
	}
}

// TestListNamesThePurgeSalvage: once a purge salvaged what changed in a
// kept trash, list --all named the reclaim's salvage, older, not the
// purge's, which holds that work and which a restore brings back.
func TestListNamesThePurgeSalvage(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	(&fixtures.Repo{T: t, Dir: res.TrashPath}).WriteFile("after.txt", "written in the kept trash after the reclaim\n")
	if _, err := p.SetTrashPolicy(PolicyTrashMinFree, "100%"); err != nil {
		t.Fatal(err)
	}
	purged, err := p.PurgeDue(t.Context())
	if err != nil || len(purged.Purged) != 1 || purged.Purged[0].SalvageRef == "" || purged.Purged[0].SalvageRef == *res.SalvageRef {
		t.Fatalf("purge: %+v, %v: want it purged with a salvage of its own", purged, err)
	}
	list, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if got := list[0].SalvageRef; got != purged.Purged[0].SalvageRef || list[0].TrashPurged != DueSpace {
		t.Errorf("listed with salvage_ref %s (purged %q), want the purge's %s", got, list[0].TrashPurged, purged.Purged[0].SalvageRef)
	}
}
