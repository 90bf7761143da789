package salvage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// Entries named .git: a folder or file that is no repository is the
// worktree's (its files are listed to be kept), a repository, a link to
// one, or anything unreadable is not.
func TestDotGitFiles(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	repo.WriteFiles(map[string]string{
		"sub/.git/notes.txt":       "notes\n",
		"sub/.git/deeper/more.txt": "more\n",
		"plain/.git":               "just a file named .git\n",
		"linked/.git":              "gitdir: /elsewhere\n",
		"marked/.git/HEAD":         "ref: refs/heads/main\n",
		"marked/.git/notes.txt":    "in a folder git may open\n",
		"ok.txt":                   "ok\n",
	})
	repo.NestedRepo("nested")
	repo.WriteFile("nested/.git/stray.txt", "inside a repository's .git\n")
	got, err := dotGitFiles(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range got {
		paths = append(paths, f.path)
	}
	want := []string{"plain/.git", "sub/.git/deeper/more.txt", "sub/.git/notes.txt"}
	if !slices.Equal(paths, want) {
		t.Errorf("dotGitFiles: %v, want %v", paths, want)
	}
	for p, repoLike := range map[string]bool{"sub/.git": false, "plain/.git": false, "linked/.git": true, "marked/.git": true, "nested/.git": true, "missing/.git": true} {
		if got := DotGitIsRepository(repo.Path(p)); got != repoLike {
			t.Errorf("DotGitIsRepository(%s) = %v, want %v", p, got, repoLike)
		}
	}
}

// A salvage ref can come from anywhere: restore writes no kept file that
// would make a folder named .git a repository, nor a file named .git that
// links to one; the others it writes.
func TestRestoreRefusedLeavesOutRepositories(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	files := []struct{ path, content string }{
		{"sub/.git/notes.txt", "notes\n"},
		{"x/.GIT/config", "[core]\n"},
		{"evil/.git/HEAD", "ref: refs/heads/main\n"},
		{"evil/.GIT/objects/info/x", "x\n"},
		{"evil/.Git/refs/heads/main", strings.Repeat("a", 40) + "\n"},
		{"link/.git", "gitdir: /elsewhere\n"},
		{"plain/.git", "a note\n"},
	}
	var list, entries strings.Builder
	for i, f := range files {
		blob, err := fixtures.GitStdin(t, repo.Dir, []byte(f.content), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&list, "100644 %d %s\x00", i, f.path)
		fmt.Fprintf(&entries, "100644 blob %s\t%d\n", strings.TrimSpace(blob), i)
	}
	listBlob, err := fixtures.GitStdin(t, repo.Dir, []byte(list.String()), "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	refusedTree, err := fixtures.GitStdin(t, repo.Dir, []byte(entries.String()), "mktree")
	if err != nil {
		t.Fatal(err)
	}
	majlisTree, err := fixtures.GitStdin(t, repo.Dir, []byte(fmt.Sprintf("040000 tree %s\trefused\n100644 blob %s\trefused-files\n",
		strings.TrimSpace(refusedTree), strings.TrimSpace(listBlob))), "mktree")
	if err != nil {
		t.Fatal(err)
	}
	top, err := fixtures.GitStdin(t, repo.Dir, []byte(fmt.Sprintf("040000 tree %s\tmajlis\n", strings.TrimSpace(majlisTree))), "mktree")
	if err != nil {
		t.Fatal(err)
	}
	meta := strings.TrimSpace(repo.Git("commit-tree", "-m", "forged", strings.TrimSpace(top)))
	wt := repo.AddWorktree(filepath.Join(fixtures.TempDir(t), "wt"), "wt")
	n, notRestored, err := restoreRefused(t.Context(), wt.Dir, filepath.Dir(wt.Dir), meta, []byte(list.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 || len(notRestored) != 4 {
		t.Errorf("restored %d, not restored %v; want 3 restored and the 4 that make or link a repository left out", n, notRestored)
	}
	for _, p := range []string{"sub/.git/notes.txt", "x/.GIT/config", "plain/.git"} {
		if _, err := os.Lstat(wt.Path(p)); err != nil {
			t.Errorf("%s not restored: %v", p, err)
		}
	}
	for _, p := range []string{"evil/.git/HEAD", "evil/.GIT/objects", "evil/.Git/refs", "link/.git"} {
		if _, err := os.Lstat(wt.Path(p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}
