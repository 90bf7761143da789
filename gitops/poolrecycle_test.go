package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestRecycleEntryAndClean: a used worktree whose git entry is dropped
// gets a fresh one (detached at the base, locked, pinned, no reflog) and
// is cleaned to the base: tracked files back, untracked and ignored ones
// gone, but a kept path; what did not differ is not rewritten.
func TestRecycleEntryAndClean(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	repo.WriteGitignore("node_modules/", "*.log")
	repo.WriteFile("a/same.txt", "same\n")
	repo.WriteFile("a/edited.txt", "base\n")
	repo.WriteFile("b/deleted.txt", "base\n")
	base := repo.Commit("base")
	wt := filepath.Join(fixtures.TempDir(t), "used")
	repo.Git("worktree", "add", "-q", "--detach", wt, base)
	used := &fixtures.Repo{T: t, Dir: wt}
	used.WriteFile("a/edited.txt", "the task's\n")
	used.WriteFile("c/new.txt", "committed by the task\n")
	used.Git("add", "-A")
	used.Git("commit", "-q", "-m", "task")
	used.Remove("b/deleted.txt")
	used.WriteFile("untracked.txt", "u\n")
	used.WriteFile("x.log", "ignored\n")
	used.WriteFile("node_modules/dep/index.js", "kept\n")
	used.WriteFile("node_modules2/y", "not kept\n")
	elsewhere := fixtures.TempDir(t)
	if err := os.WriteFile(filepath.Join(elsewhere, "someone's"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(wt, "cache")); err != nil { // kept by name, but a link out
		t.Fatal(err)
	}
	same, _ := os.Stat(filepath.Join(wt, "a/same.txt"))
	old := used.GitDir()
	if err := os.RemoveAll(old); err != nil { // the provider drops it (salvaged)
		t.Fatal(err)
	}
	pool := filepath.Join(filepath.Dir(wt), ".majlis-pool-x")
	if err := os.Rename(wt, pool); err != nil {
		t.Fatal(err)
	}
	stage := filepath.Join(fixtures.TempDir(t), "stage")
	admin, err := FreshEntry(ctx, repo.CommonDir(), stage, pool, base, "majlis pool", "sha256:pin")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(admin) != "-majlis-pool-x" {
		t.Errorf("entry %s", admin)
	}
	if err := CleanToBase(ctx, pool, base, []string{"node_modules", "cache"}); err != nil {
		t.Fatal(err)
	}
	p := &fixtures.Repo{T: t, Dir: pool}
	if st := p.Git("status", "--porcelain", "--ignored", "-uall"); st != "!! node_modules/dep/index.js\n" {
		t.Errorf("status after cleaning:\n%s", st)
	}
	if b, err := os.ReadFile(filepath.Join(elsewhere, "someone's")); err != nil || string(b) != "x\n" {
		t.Errorf("the folder a link named was touched: %q, %v", b, err)
	}
	if h := strings.TrimSpace(p.Git("rev-parse", "HEAD")); h != base {
		t.Errorf("HEAD %s, want %s", h, base)
	}
	if pin, err := ReadEntryPin(admin); err != nil || pin != "sha256:pin" {
		t.Errorf("pin %q, %v", pin, err)
	}
	if l, err := ReadWorktreeLock(admin); err != nil || !l.Locked || l.Reason != "majlis pool" {
		t.Errorf("lock %+v, %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(admin, "logs")); !os.IsNotExist(err) {
		t.Errorf("the fresh entry has a reflog: %v", err)
	}
	if now, _ := os.Stat(filepath.Join(pool, "a/same.txt")); !os.SameFile(same, now) || !now.ModTime().Equal(same.ModTime()) {
		t.Errorf("a file that did not differ was rewritten")
	}
	if !strings.Contains(repo.Git("worktree", "list", "--porcelain"), "worktree "+pool+"\nHEAD "+base+"\ndetached\nlocked majlis pool") {
		t.Errorf("git's view:\n%s", repo.Git("worktree", "list", "--porcelain"))
	}
	if _, err := FreshEntry(ctx, repo.CommonDir(), stage+"2", pool, base, "majlis pool", "sha256:pin"); err == nil {
		t.Errorf("a second entry of the same name was made")
	}
}

// TestRecycleConvertedFiles: a file git converts (an eol or text
// attribute, ident, core.autocrlf) whose bytes the task changed in a way
// git's comparison calls unchanged (line endings, an expanded keyword) is
// written again: a recycled worktree holds the bytes a fresh checkout of
// the base writes, not the task's. A converted file the task left alone is
// not rewritten.
func TestRecycleConvertedFiles(t *testing.T) {
	t.Parallel()
	for _, autocrlf := range []string{"", "input", "true"} {
		t.Run("autocrlf="+autocrlf, func(t *testing.T) {
			t.Parallel()
			repo := fixtures.NewRepo(t)
			if autocrlf != "" {
				repo.Git("config", "core.autocrlf", autocrlf)
			}
			repo.WriteFile(".gitattributes", "*.txt text\n*.win eol=crlf\n*.id ident\n*.bin -text\n*.old crlf\n")
			files := []struct{ name, base, task string }{
				{"a.txt", "a\nb\n", "a\r\nb\r\n"}, // CRLF where git writes LF
				{"b.win", "x\ny\n", "x\ny\n"},     // LF where git writes CRLF
				{"c.id", "$Id$\n", "$Id$\n"},      // the keyword as git stores it, not as it writes it
				{"auto", "plain\n", "plain\r\n"},  // converted only under core.autocrlf
				{"d.bin", "raw\n", "raw\r\n"},     // never converted: changed
				{"kept.txt", "left\nalone\n", ""}, // not touched by the task
				{"e.old", "o\n", "o\r\n"},         // text's older name
			}
			for _, f := range files {
				repo.WriteFile(f.name, f.base)
			}
			base := repo.Commit("base")
			fresh := filepath.Join(fixtures.TempDir(t), "fresh")
			repo.Git("worktree", "add", "-q", "--detach", fresh, base)
			wt := filepath.Join(fixtures.TempDir(t), "used")
			repo.Git("worktree", "add", "-q", "--detach", wt, base)
			kept, _ := os.Stat(filepath.Join(wt, "kept.txt"))
			old := time.Now().Add(-time.Hour) // not racily clean: git trusts the stat data it records
			for _, f := range files {
				if f.task == "" {
					continue
				}
				if err := os.WriteFile(filepath.Join(wt, f.name), []byte(f.task), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(filepath.Join(wt, f.name), old, old); err != nil {
					t.Fatal(err)
				}
			}
			recycle(t, repo, wt, base)
			for _, f := range files {
				want, _ := os.ReadFile(filepath.Join(fresh, f.name))
				got, _ := os.ReadFile(filepath.Join(wt+".pool", f.name))
				if string(got) != string(want) {
					t.Errorf("%s: recycled %q, a fresh checkout %q", f.name, got, want)
				}
			}
			if autocrlf != "true" {
				if now, _ := os.Stat(filepath.Join(wt+".pool", "kept.txt")); !os.SameFile(kept, now) {
					t.Errorf("a converted file the task left alone was rewritten")
				}
			}
		})
	}
}

// recycle drops the git entry of the worktree wt, moves it to wt+".pool",
// gives it a fresh entry at base and cleans it.
func recycle(t *testing.T, repo *fixtures.Repo, wt, base string) {
	t.Helper()
	if err := os.RemoveAll((&fixtures.Repo{T: t, Dir: wt}).GitDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(wt, wt+".pool"); err != nil {
		t.Fatal(err)
	}
	stage := filepath.Join(fixtures.TempDir(t), "stage")
	if _, err := FreshEntry(ctx, repo.CommonDir(), stage, wt+".pool", base, "majlis pool", "sha256:pin"); err != nil {
		t.Fatal(err)
	}
	if err := CleanToBase(ctx, wt+".pool", base, nil); err != nil {
		t.Fatal(err)
	}
}
