package provider

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// A submodule that is not checked out leaves an empty folder, and git
// sees nothing written into it. The reclaim keeps such files, a second
// snapshot catches those written once the workspace is in its trash, and
// restore brings them back; with nothing new, no second salvage is made.
func TestReclaimKeepsFilesInUnpopulatedSubmodule(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "nothing new", true: "written in the trash"}[late], func(t *testing.T) {
			_, p, target := submoduleWorkspace(t)
			ws := &fixtures.Repo{T: t, Dir: target.Path}
			if _, err := os.Lstat(ws.Path("lib/.git")); err == nil {
				t.Fatal("the fixture's submodule is checked out")
			}
			ws.WriteFile("lib/notes.txt", "kept\n")
			if out := ws.Git("status", "--porcelain", "--ignored", "-uall"); out != "" {
				t.Fatalf("git sees the file: %q", out)
			}
			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			if pv.Salvage.Clean || len(pv.Salvage.UnpopulatedSubmoduleFiles) != 1 {
				t.Fatalf("preview: clean %v, unpopulated %v; want the file named", pv.Salvage.Clean, pv.Salvage.UnpopulatedSubmoduleFiles)
			}
			if late {
				p.hook = func(ctx context.Context, point string) {
					if point != "reclaim/repaired" {
						return
					}
					m, _ := filepath.Glob(filepath.Join(filepath.Dir(target.Path), trashPrefix+"T-1.*"))
					if len(m) != 1 {
						t.Errorf("trash folders: %v", m)
						return
					}
					if err := os.WriteFile(filepath.Join(m[0], "lib", "late.txt"), []byte("late\n"), 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
			p.hook = nil
			if err != nil {
				t.Fatal(err)
			}
			if (res.SecondSalvageRef != nil) != late {
				t.Fatalf("second salvage ref %v; want one only when a file was written in the trash", res.SecondSalvageRef)
			}
			rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
			if err != nil {
				t.Fatal(err)
			}
			back := &fixtures.Repo{T: t, Dir: rr.Workspace.Path}
			if got := back.ReadFile("lib/notes.txt"); got != "kept\n" {
				t.Errorf("lib/notes.txt = %q after restore", got)
			}
			if _, err := os.Lstat(back.Path("lib/late.txt")); (err == nil) != late {
				t.Errorf("lib/late.txt after restore: %v (written in the trash: %v)", err, late)
			}
		})
	}
}
