package gitops

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// A worktree registered under a name that is not clean (a ".." after a
// symbolic link, a repeated slash, a "."), as a repair by hand leaves
// it, is listed by WorktreePaths as git lists it: cleaning the name
// lexically would move a ".." after a link to another folder, one the
// nesting checks would then take the worktree to be in.
func TestWorktreePathsKeepUncleanNames(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	base := fixtures.TempDir(t)
	if err := os.MkdirAll(filepath.Join(base, "real", "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "real", "a", "b"), filepath.Join(base, "deep")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ at, as string }{
		{"real/a/x", "deep/../x"}, // real/a/x to the kernel, base/x to filepath.Clean
		{"real/y", "real//y"},
		{"real/z", "real/./z"},
	} {
		w := filepath.Join(base, tc.at)
		repo.Git("worktree", "add", "--quiet", "--detach", w, "HEAD")
		gitdir := base + "/" + tc.as + "/.git\n"
		if err := os.WriteFile(filepath.Join(fixtures.AdminDir(t, w), "gitdir"), []byte(gitdir), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wts, err := ListWorktrees(ctx, repo.CommonDir())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, w := range wts {
		want = append(want, w.Path)
	}
	got, err := WorktreePaths(ctx, repo.CommonDir())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want[1:]) // git lists the entries in its directory's order
	slices.Sort(got[1:])
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("WorktreePaths differs from git's list (-git +WorktreePaths):\n%s", diff)
	}
}
