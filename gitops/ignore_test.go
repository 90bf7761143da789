package gitops

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// TestWritersRefuseNonTopLevel: run in a directory that is not a
// worktree's top level, git would walk up and act on the enclosing
// repository. The functions that write to a worktree refuse instead.
func TestWritersRefuseNonTopLevel(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("tracked.txt", "committed\n")
	r.Commit("c")
	r.WriteFile("tracked.txt", "uncommitted work\n")
	r.WriteFile("sub/untracked.txt", "untracked work\n")
	// A worktree whose .git is an empty directory: git would skip it and
	// walk up; the ceiling stops it.
	r.Mkdir("fake/.git")
	r.WriteFile("fake/untracked.txt", "untracked work\n")
	before := fixtures.Files(t, r.Dir)

	head, branch := r.Head(), strings.TrimSpace(r.Git("symbolic-ref", "HEAD"))
	for _, dir := range []string{r.Path("sub"), r.Path("fake"), filepath.Join(r.Dir, "missing")} {
		if err := DetachHead(ctx, dir, branch, head); err == nil {
			t.Errorf("DetachHead(%s) succeeded", dir)
		}
		if err := AttachHead(ctx, dir, branch); err == nil {
			t.Errorf("AttachHead(%s) succeeded", dir)
		}
		if err := SetUnbornBranch(ctx, dir, "orphan"); err == nil {
			t.Errorf("SetUnbornBranch(%s) succeeded", dir)
		}
		if _, err := CheckIgnore(ctx, dir, "x"); err == nil {
			t.Errorf("CheckIgnore(%s) succeeded", dir)
		}
	}
	if err := SetUnbornBranch(ctx, r.Path("sub"), "orphan"); !errorsIs(err, ErrNotTopLevel) {
		t.Errorf("SetUnbornBranch of a subdirectory: %v, want ErrNotTopLevel", err)
	}
	if err := SetUnbornBranch(ctx, r.Path("fake"), "orphan"); !errorsIs(err, ErrNotARepository) {
		t.Errorf("SetUnbornBranch below an empty .git: %v, want ErrNotARepository", err)
	}
	if got := strings.TrimSpace(r.Git("symbolic-ref", "HEAD")); got != branch || r.Head() != head {
		t.Errorf("HEAD is %s at %s, was %s at %s", got, r.Head(), branch, head)
	}
	if diff := cmp.Diff(before, fixtures.Files(t, r.Dir)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
}

func TestCheckIgnore(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	main.WriteGitignore(".worktrees/", "*.log", "!keep.log", "glob[*].txt")
	main.WriteFile("tracked.log", "tracked\n")
	main.Git("add", "-f", "tracked.log")
	main.WriteInfoExclude("excluded-by-info")
	main.SetExcludesFile("*.global")
	main.Commit("ignore rules")
	main.Mkdir(".worktrees/T-14")
	main.Mkdir("dir with space")
	linked := main.NewWorktree("linked")

	tests := []struct {
		path string
		want bool
	}{
		{".worktrees/T-14", true},
		{".worktrees/not-yet-created", true},
		{"debug.log", true},
		{"keep.log", false},
		{"tracked.log", false},
		{"excluded-by-info", true},
		{"x.global", true},
		{"dir with space/a.global", true},
		{"README.md", false},
		{"src/new.go", false},
		{"glob[*].txt", false},
		{"glob*.txt", true},
		{"globx.txt", false},
		{":magic.log", true},
	}
	for _, wt := range []*fixtures.Repo{main, linked} {
		for _, tt := range tests {
			got, err := CheckIgnore(ctx, wt.Dir, tt.path)
			if err != nil || got != tt.want {
				t.Errorf("CheckIgnore(%s, %q) = %v, %v; want %v", filepath.Base(wt.Dir), tt.path, got, err, tt.want)
			}
		}
	}
	// A directory-only pattern matches a directory that exists.
	if got, err := CheckIgnore(ctx, main.Dir, ".worktrees"); err != nil || !got {
		t.Errorf("CheckIgnore(.worktrees) where it exists = %v, %v; want true", got, err)
	}
	if got, err := CheckIgnore(ctx, linked.Dir, ".worktrees"); err != nil || got {
		t.Errorf("CheckIgnore(.worktrees) where it does not exist = %v, %v; want false", got, err)
	}
	abs := main.Path(".worktrees/T-14")
	if got, err := CheckIgnore(ctx, main.Dir, abs); err != nil || !got {
		t.Errorf("CheckIgnore with an absolute path = %v, %v", got, err)
	}
	if _, err := CheckIgnore(ctx, main.Dir, "/elsewhere/x"); err == nil {
		t.Errorf("CheckIgnore of a path outside the worktree succeeded")
	}
	if _, err := CheckIgnore(ctx, main.Dir, ""); err == nil {
		t.Errorf("CheckIgnore of an empty path succeeded")
	}
}
