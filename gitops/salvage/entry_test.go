package salvage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// A worktree's folder moved away by hand, its entry left: SnapshotEntry
// keeps HEAD's detached commit, the per-worktree refs, the staged blobs
// (the salvage tree and the index commit are the index's tree; the raw
// index is in the meta commit), and git fsck accepts the salvage.
func TestSnapshotEntry(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	wt := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "wt"), "wt")
	keep := wt.WorktreeRefCommit("wt", "refs/worktree/keep", "w.txt", "kept by a worktree ref\n")
	bad := wt.WorktreeRefCommit("wt", "refs/bisect/bad", "b.txt", "bisect\n")
	detached := wt.DetachedCommit("d.txt", "detached\n")
	staged := wt.PartialStage("README.md", "staged\n", "in the folder\n")
	gitDir := wt.GitDir()
	away := filepath.Join(fixtures.TempDir(t), "away")
	if err := os.Rename(wt.Dir, away); err != nil {
		t.Fatal(err)
	}
	indexBefore, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	snap, es, err := SnapshotEntry(t.Context(), gitDir, repo.CommonDir(), "salvage of an entry\n\nMajlis-Binding: T-1\n")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Clean || snap.Commit == "" || es.Head != detached || es.Branch != "" || es.Staged.Modified != 1 {
		t.Fatalf("snapshot %+v survey head %s branch %q staged %+v", snap, es.Head, es.Branch, es.Staged)
	}
	if got, _ := os.ReadFile(filepath.Join(gitDir, "index")); string(got) != string(indexBefore) {
		t.Errorf("the salvage changed the entry's index")
	}
	repo.Git("update-ref", "refs/majlis/salvage/T-1/1", snap.Commit)
	raw := repo.Git("cat-file", "commit", snap.Commit)
	l, err := ParseCommit([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if l.Head != detached || l.Branch != "" || l.Meta == "" {
		t.Errorf("layout %+v, want HEAD %s detached with a meta commit", l, detached)
	}
	if got := repo.Git("show", snap.Commit+":README.md"); got != "staged\n" {
		t.Errorf("the salvage tree holds README.md %q, want the staged version", got)
	}
	if got := repo.Git("show", l.Index+":README.md"); got != "staged\n" {
		t.Errorf("the index commit holds README.md %q", got)
	}
	if got := repo.Git("show", l.Meta+":refs/worktree/keep"); strings.TrimSpace(got) != keep {
		t.Errorf("the meta commit's refs/worktree/keep holds %q, want %s", got, keep)
	}
	// Gone with the entry, every one of them still reachable.
	if err := os.RemoveAll(gitDir); err != nil {
		t.Fatal(err)
	}
	repo.Git("worktree", "prune")
	for what, id := range map[string]string{"the detached commit": detached, "the worktree ref's commit": keep,
		"the bisect ref's commit": bad, "the staged blob": staged} {
		if !repo.Reachable(id) {
			t.Errorf("%s (%s) is reachable from no ref", what, id)
		}
	}
	if out, err := repo.TryGit("fsck", "--strict", "--no-dangling"); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// An entry on its branch, its index HEAD's tree, holds nothing to keep;
// an entry whose HEAD cannot be read is an error, not a clean entry.
func TestSnapshotEntryCleanAndDamaged(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	wt := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "wt"), "wt")
	gitDir := wt.GitDir()
	if err := os.RemoveAll(wt.Dir); err != nil {
		t.Fatal(err)
	}
	snap, es, err := SnapshotEntry(t.Context(), gitDir, repo.CommonDir(), "m")
	if err != nil || !snap.Clean || !es.Clean() {
		t.Fatalf("clean entry: %+v %v", snap, err)
	}
	for name, content := range map[string]string{"garbage": "not a ref\n", "unknown commit": strings.Repeat("ab", 20) + "\n"} {
		if err := os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := SnapshotEntry(t.Context(), gitDir, repo.CommonDir(), "m"); err == nil {
			t.Errorf("%s HEAD: no error", name)
		}
	}
}

// An entry moved aside (into majlis's trash) keeps a commondir file
// relative to where it was: salvaged with its common directory named, it
// is read all the same.
func TestSnapshotEntryMovedAside(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	wt := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "wt"), "wt")
	detached := wt.DetachedCommit("d.txt", "detached\n")
	entry := wt.GitDir()
	if err := os.RemoveAll(wt.Dir); err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(repo.CommonDir(), "majlis", "trash", "T-1.000001.entry")
	if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(entry, aside); err != nil {
		t.Fatal(err)
	}
	snap, es, err := SnapshotEntry(t.Context(), aside, repo.CommonDir(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Clean || es.Head != detached || snap.Layout.Head != detached {
		t.Errorf("the entry aside: clean %v head %s layout %+v, want its detached commit %s", snap.Clean, es.Head, snap.Layout, detached)
	}
}
