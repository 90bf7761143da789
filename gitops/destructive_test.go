package gitops

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestResetHardAndClean(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	main.WriteFile("tracked.txt", "committed\n")
	main.WriteGitignore("*.o")
	main.Commit("files")
	w := main.NewWorktree("T-14")
	w.WriteFile("tracked.txt", "changed\n")
	w.WriteFile("staged.txt", "staged\n")
	w.Git("add", "staged.txt")
	w.WriteFile("untracked/file.txt", "untracked\n")
	w.WriteFile("build.o", "ignored\n")
	w.NestedRepo("nested")
	mainFiles := files(t, main.Dir)

	if err := ResetHard(ctx, w.Dir); err != nil {
		t.Fatal(err)
	}
	if got := w.ReadFile("tracked.txt"); got != "committed\n" {
		t.Errorf("tracked.txt after ResetHard = %q", got)
	}
	for _, p := range []string{"untracked/file.txt", "build.o", "nested/README.md"} {
		if !exists(w.Path(p)) {
			t.Errorf("ResetHard removed %s", p)
		}
	}

	if err := CleanUntracked(ctx, w.Dir, CleanOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"untracked": false, "staged.txt": false, "build.o": true, "nested/README.md": true, "tracked.txt": true} {
		if exists(w.Path(p)) != want {
			t.Errorf("after CleanUntracked, %s exists = %v, want %v", p, !want, want)
		}
	}
	if err := CleanUntracked(ctx, w.Dir, CleanOptions{Ignored: true}); err != nil {
		t.Fatal(err)
	}
	if exists(w.Path("build.o")) || !exists(w.Path("nested/README.md")) {
		t.Errorf("CleanUntracked{Ignored} should remove build.o and keep the nested repository")
	}
	st, err := ReadStatus(ctx, w.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]brief{{Kind: "untracked", Path: "nested/"}}, briefs(st)); diff != "" {
		t.Errorf("status after reset and clean (-want +got):\n%s", diff)
	}
	// The main worktree was not touched.
	if diff := cmp.Diff(mainFiles, files(t, main.Dir)); diff != "" {
		t.Errorf("main worktree changed (-before +after):\n%s", diff)
	}
}

// TestDestructiveRefusesNonTopLevel: run in a directory that is not a
// worktree's top level, git would walk up and reset or clean the
// enclosing repository. The helpers refuse instead.
func TestDestructiveRefusesNonTopLevel(t *testing.T) {
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
	before := files(t, r.Dir)

	for _, dir := range []string{r.Path("sub"), r.Path("fake"), filepath.Join(r.Dir, "missing")} {
		err := ResetHard(ctx, dir)
		if err == nil {
			t.Errorf("ResetHard(%s) succeeded", dir)
		}
		if err := CleanUntracked(ctx, dir, CleanOptions{Ignored: true}); err == nil {
			t.Errorf("CleanUntracked(%s) succeeded", dir)
		}
		if _, err := CheckIgnore(ctx, dir, "x"); err == nil {
			t.Errorf("CheckIgnore(%s) succeeded", dir)
		}
	}
	if _, err := Snapshot(ctx, r.Path("fake"), "m"); err == nil {
		t.Errorf("Snapshot of a fake worktree succeeded")
	}
	if err := ResetHard(ctx, r.Path("sub")); !errorsIs(err, ErrNotTopLevel) {
		t.Errorf("ResetHard of a subdirectory: %v, want ErrNotTopLevel", err)
	}
	if err := ResetHard(ctx, r.Path("fake")); !errorsIs(err, ErrNotARepository) {
		t.Errorf("ResetHard below an empty .git: %v, want ErrNotARepository", err)
	}
	if diff := cmp.Diff(before, files(t, r.Dir)); diff != "" {
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
