package gitops

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// A kept trash's HEAD lets go of its branch and takes it back, each only
// from where it was: anything else refuses and changes nothing.
func TestDetachAndAttachHead(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	wt := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "wt"), "topic")
	wt.WriteFile("staged.txt", "staged\n")
	wt.Git("add", "staged.txt")
	tip := wt.Head()
	index := wt.Git("ls-files", "-s")

	// Refused: not the branch HEAD is on, or not its commit.
	if err := DetachHead(t.Context(), wt.Dir, "refs/heads/main", tip); !errors.Is(err, ErrRefChanged) {
		t.Errorf("detach from another branch: %v, want ErrRefChanged", err)
	}
	if err := DetachHead(t.Context(), wt.Dir, "refs/heads/topic", strings.Repeat("0", len(tip))); !errors.Is(err, ErrRefChanged) {
		t.Errorf("detach at another commit: %v, want ErrRefChanged", err)
	}
	if h, err := ReadHead(t.Context(), wt.Dir); err != nil || h.Branch != "refs/heads/topic" || h.Commit != tip {
		t.Fatalf("HEAD after refusals: %+v, %v", h, err)
	}

	if err := DetachHead(t.Context(), wt.Dir, "refs/heads/topic", tip); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHead(t.Context(), wt.Dir); err != nil || h.Branch != "" || h.Commit != tip {
		t.Fatalf("HEAD after detaching: %+v, %v", h, err)
	}
	if got := repo.RevParse("refs/heads/topic"); got != tip {
		t.Errorf("the branch moved to %s", got)
	}
	if got := wt.Git("ls-files", "-s"); got != index {
		t.Errorf("the index changed:\n%s\nwant\n%s", got, index)
	}
	if wts := repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, "branch refs/heads/topic") {
		t.Errorf("git still lists topic as checked out:\n%s", wts)
	}
	// Again: nothing to do.
	if err := DetachHead(t.Context(), wt.Dir, "refs/heads/topic", tip); err != nil {
		t.Errorf("detach again: %v", err)
	}

	// The branch moves: HEAD is not put back on it.
	other := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "other"), "elsewhere")
	other.Git("checkout", "-q", "topic")
	other.WriteFile("moved.txt", "moved\n")
	moved := other.Commit("moved topic")
	if err := AttachHead(t.Context(), wt.Dir, "refs/heads/topic"); !errors.Is(err, ErrRefChanged) {
		t.Errorf("attach to a moved branch: %v, want ErrRefChanged", err)
	}
	if h, _ := ReadHead(t.Context(), wt.Dir); h.Branch != "" || h.Commit != tip {
		t.Errorf("HEAD after a refused attach: %+v", h)
	}
	// Back where it was: attached.
	other.Git("checkout", "-q", "--detach")
	repo.Git("update-ref", "refs/heads/topic", tip, moved)
	if err := AttachHead(t.Context(), wt.Dir, "refs/heads/topic"); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadHead(t.Context(), wt.Dir); err != nil || h.Branch != "refs/heads/topic" || h.Commit != tip {
		t.Errorf("HEAD after attaching: %+v, %v", h, err)
	}
}
