package provider

import (
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops/salvage"
)

// FIFOs and sockets, wherever they are in a workspace (an ignored folder
// too), are named by the preview, covered by its digest, and counted by
// the reclaim that deletes them.
func TestPreviewNamesSpecialFiles(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	repo.WriteGitignore("build/")
	repo.Commit("ignore build")
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: target.Path}
	ws.SpecialFile("build/dev.sock", "socket")
	ws.SpecialFile("run/pipe", "fifo")
	pv, err := p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	want := []salvage.SpecialFile{{Path: "build/dev.sock", Type: "socket"}, {Path: "run/pipe", Type: "fifo"}}
	if diff := cmp.Diff(want, pv.SpecialPaths); diff != "" || pv.SpecialFiles != 2 {
		t.Errorf("preview's special files: %d (-want +got):\n%s", pv.SpecialFiles, diff)
	}
	if !pv.Salvage.Clean {
		t.Errorf("a workspace holding only special files is not clean: nothing can be salvaged")
	}

	// A socket bound after the preview: the confirmation is stale, and
	// nothing changes.
	ws.SpecialFile("run/late.sock", "socket")
	_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
	if !errors.Is(err, ErrPreviewStale) {
		t.Fatalf("reclaim on a preview that did not show run/late.sock: %v; want ErrPreviewStale", err)
	}
	if _, err := os.Lstat(ws.Path("run/late.sock")); err != nil {
		t.Fatalf("after the refusal: %v", err)
	}
	pv, err = p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if res.SpecialFiles != 3 || !res.Removed {
		t.Errorf("reclaim: special files %d, removed %v; want 3, true", res.SpecialFiles, res.Removed)
	}
}
