package provider

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// Untracked files whose names git refuses to store (git lists them, git
// add refuses them), and files under a folder or a file named .git that
// is no repository (git never lists them), issue 24 item 4: the preview
// names each, the reclaim keeps their bytes under encoded names (git fsck
// --strict and git read-tree accept every commit of the salvage), and
// restore writes them back under their own names.
func TestReclaimKeepsNamesGitRefuses(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	files := map[string]string{
		"x/.GIT/config":            "refused: .GIT\n",
		"y/GIT~1/f":                "refused: GIT~1\n",
		"z/.git./f":                "refused: .git.\n",
		"sub/.git/notes.txt":       "under a .git folder that is no repository\n",
		"sub/.git/deeper/more.txt": "deeper\n",
		"plain/.git":               "a file named .git, no link\n",
		"ok.txt":                   "an ordinary untracked file\n",
	}
	ws.WriteFiles(files)
	pv, err := p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	named := slices.Clone(pv.Salvage.RefusedNames)
	slices.Sort(named)
	want := []string{"plain/.git", "sub/.git/deeper/more.txt", "sub/.git/notes.txt", "x/.GIT/config", "y/GIT~1/f", "z/.git./f"}
	if !slices.Equal(named, want) || pv.Salvage.Clean {
		t.Errorf("the preview names %v (clean %v), want %v", named, pv.Salvage.Clean, want)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
	if err != nil {
		t.Fatal(err)
	}
	ref := *res.SalvageRef
	if out, err := repo.TryGit("fsck", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	for _, rev := range []string{ref, ref + "^2", ref + "^3", ref + "^4"} {
		if out, err := repo.TryGit("read-tree", "--index-output="+t.TempDir()+"/i", rev); err != nil {
			t.Errorf("git read-tree %s: %v\n%s", rev, err, out)
		}
	}
	for _, line := range strings.Split(repo.Git("ls-tree", "-r", "--name-only", ref), "\n") {
		for _, c := range strings.Split(line, "/") {
			if strings.EqualFold(c, ".git") || strings.HasPrefix(strings.ToLower(c), ".git.") || strings.EqualFold(c, "git~1") {
				t.Errorf("the salvage tree holds %q", line)
			}
		}
	}
	rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.NotRestored) != 0 {
		t.Errorf("not restored: %v", rr.NotRestored)
	}
	for f, content := range files {
		b, err := os.ReadFile(rr.Workspace.Path + "/" + f)
		if err != nil || string(b) != content {
			t.Errorf("restored %s: %q %v, want %q", f, b, err, content)
		}
	}
}
