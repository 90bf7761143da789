package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// WorktreeHead answers as git does for every way a linked worktree's
// branch can be stored: a loose ref, a packed one, a loose ref that
// overrides a stale packed one, a branch naming an annotated tag, a
// detached HEAD, and an unborn branch (no answer).
func TestWorktreeHeadAgreesWithGit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	repo := fixtures.NewRepo(t)
	first := repo.Head()
	repo.WriteFile("second.txt", "second\n")
	second := repo.Commit("second")
	base := fixtures.TempDir(t)
	add := func(name string, args ...string) string {
		dir := filepath.Join(base, name)
		repo.Git(append([]string{"worktree", "add", "-q"}, append(args, dir)...)...)
		return dir
	}
	loose := add("loose", "-b", "loose-branch")
	packed := add("packed", "-b", "packed-branch")
	repo.Git("pack-refs", "--all")
	// A loose ref written after packing overrides the packed one.
	stale := add("stale", "-b", "stale-branch")
	repo.Git("pack-refs", "--all")
	repo.Git("update-ref", "refs/heads/stale-branch", first)
	repo.Git("tag", "-a", "-m", "annotated", "annotated", second)
	tagged := add("tagged", "-b", "tagged-branch")
	// git refuses to point a branch at a tag object; a hand-written ref can.
	if err := os.WriteFile(filepath.Join(repo.CommonDir(), "refs", "heads", "tagged-branch"), []byte(repo.RevParse("refs/tags/annotated")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	detached := add("detached", "--detach")
	unborn := add("unborn", "-b", "unborn-branch")
	if err := os.WriteFile(filepath.Join(fixtures.AdminDir(t, unborn), "HEAD"), []byte("ref: refs/heads/never-born\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r, err := OpenReader(ctx, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{loose, packed, stale, tagged, detached} {
		want := strings.TrimSpace(fixtures.Git(t, dir, "rev-parse", "HEAD^{commit}"))
		for range 2 { // the second time from the Reader's cache of peeled ids
			if got, err := r.WorktreeHead(ctx, dir); err != nil || got != want {
				t.Errorf("%s: WorktreeHead = %q, %v; git says %s", filepath.Base(dir), got, err, want)
			}
		}
	}
	if got, err := r.WorktreeHead(ctx, unborn); err == nil {
		t.Errorf("unborn: WorktreeHead = %q, want an error", got)
	}
}
