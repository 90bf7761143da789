package provider

import (
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestPurgeKeepsSubmoduleWorkDoneInKeptTrash: a submodule's repository
// lives in the workspace's git entry, which the purge deletes. A commit
// made in a checked-out submodule of a kept trash folder after the
// reclaim (which copied the submodule's history as it was then), and
// uncommitted work there, are copied into the repository by the purge
// before it deletes anything.
func TestPurgeKeepsSubmoduleWorkDoneInKeptTrash(t *testing.T) {
	t.Parallel()
	repo, p, w := submoduleWorkspace(t)
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.Git("-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--init")
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.TrashPath == "" {
		t.Fatalf("result %+v: want the trash kept", res)
	}
	sub := &fixtures.Repo{T: t, Dir: res.TrashPath + "/lib"}
	sub.Git("checkout", "-q", "-b", "work")
	sub.WriteFile("late.txt", "committed in the submodule of the kept trash\n")
	late := sub.Commit("made in the kept trash's submodule")
	sub.WriteFile("wip.txt", "uncommitted in the submodule of the kept trash\n")
	wip := sub.Git("hash-object", "wip.txt")

	pt, err := p.purgeKept(t.Context(), "T-1", 1, DueExpired)
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	if !reachable(t, repo)[late] {
		t.Errorf("the commit %s made in the kept trash's submodule is not reachable after the purge (%+v)", late, pt)
	}
	objects := repo.Git("rev-list", "--objects", "--all")
	if !strings.Contains(objects, strings.TrimSpace(wip)) {
		t.Errorf("the uncommitted file of the kept trash's submodule (blob %s) is not reachable after the purge", strings.TrimSpace(wip))
	}
}
