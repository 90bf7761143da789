package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// A workspace whose parent folder is a symbolic link pointed elsewhere
// since (issue 24 item 13): git lists it at its physical path, which
// exists, so it is not missing. The preview shows its salvage at that
// path; a refused reclaim leaves majlis's lock on it; the reclaim salvages
// it there and moves it into a trash folder beside it. The link is not
// touched.
func TestReclaimThroughARepointedParentLink(t *testing.T) {
	t.Parallel()
	root := fixtures.TempDir(t)
	real1, real2, link := filepath.Join(root, "real1"), filepath.Join(root, "real2"), filepath.Join(root, "ws")
	for _, d := range []string{real1, real2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(real1, link); err != nil {
		t.Fatal(err)
	}
	repo := fixtures.NewRepo(t)
	if _, err := Init(t.Context(), repo.Dir, InitOptions{WorkspaceRoot: link}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	physical := filepath.Join(real1, "T-1")
	if w.Path != filepath.Join(link, "T-1") || w.PhysicalPath != physical {
		t.Fatalf("allocated at %s (%s)", w.Path, w.PhysicalPath)
	}
	ws := &fixtures.Repo{T: t, Dir: physical}
	detached := ws.DetachedCommit("d.txt", "detached\n")
	ws.WriteFile("README.md", "changed\n")
	ws.WriteFile("new.txt", "untracked\n")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real2, link); err != nil {
		t.Fatal(err)
	}
	locked := func(when string) {
		t.Helper()
		if out := repo.Git("worktree", "list", "--porcelain"); !strings.Contains(out, "worktree "+physical+"\n") || !strings.Contains(out, "locked majlis workspace T-1") {
			t.Errorf("%s: git does not list T-1 at %s with majlis's lock:\n%s", when, physical, out)
		}
	}

	pv, err := p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if pv.Path != physical || pv.Salvage.Clean || pv.Salvage.Files != 2 || pv.Steps[0].Name != "salvage" || pv.Steps[1].Name != "move" {
		t.Fatalf("preview: path %s clean %v files %d steps %+v; want the workspace at %s", pv.Path, pv.Salvage.Clean, pv.Salvage.Files, pv.Steps, physical)
	}
	// Refused (the workspace changed since the preview): nothing changes.
	ws.WriteFile("later.txt", "after the preview\n")
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest}); !errors.Is(err, ErrPreviewStale) {
		t.Fatalf("reclaim of a stale preview: %v", err)
	}
	locked("after the refused reclaim")
	if ws.ReadFile("later.txt") != "after the preview\n" {
		t.Errorf("the refused reclaim touched the workspace")
	}

	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.SalvageRef == nil || !res.Removed {
		t.Fatalf("result %+v", res)
	}
	for f, want := range map[string]string{"README.md": "changed\n", "new.txt": "untracked\n", "later.txt": "after the preview\n"} {
		if got := repo.Git("show", *res.SalvageRef+":"+f); got != want {
			t.Errorf("the salvage holds %s %q, want %q", f, got, want)
		}
	}
	mustReach(t, repo, "the detached commit", detached)
	if _, err := os.Lstat(physical); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace is still at %s: %v", physical, err)
	}
	if target, _ := os.Readlink(link); target != real2 {
		t.Errorf("the link now points to %q", target)
	}
	if strings.Contains(repo.Git("worktree", "list", "--porcelain"), "T-1") {
		t.Errorf("git still lists T-1")
	}
}
