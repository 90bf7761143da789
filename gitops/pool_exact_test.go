package gitops

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestCheckoutSettings: the checkout settings change with what changes
// the files a checkout writes (end of line, the repository's and the
// user's attributes), and not with what does not (another home folder
// holding the same attributes, an unrelated key).
func TestCheckoutSettings(t *testing.T) {
	repo := fixtures.NewRepo(t)
	common := repo.CommonDir()
	read := func() string {
		t.Helper()
		s, err := CheckoutSettings(ctx, common)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := read()
	repo.Config("user.name", "someone else")
	if read() != first {
		t.Error("an unrelated key changed the settings")
	}
	home := t.TempDir()
	global, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".gitconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), global, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	if read() != first {
		t.Error("another home without attributes changed the settings")
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "git", "attributes"), []byte("*.txt eol=crlf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	user := read()
	if user == first {
		t.Error("the user's attributes did not change the settings")
	}
	repo.WriteFile(".git/info/attributes", "*.md -text\n")
	own := read()
	if own == user {
		t.Error("the repository's attributes did not change the settings")
	}
	repo.Config("core.autocrlf", "input")
	if read() == own {
		t.Error("core.autocrlf did not change the settings")
	}
}

// TestPoolEntryExtra: git's entry of a worktree just made detached holds
// nothing extra; a per-worktree ref, per-worktree config or a move of
// HEAD is named.
func TestPoolEntryExtra(t *testing.T) {
	repo := fixtures.NewRepo(t)
	base := repo.Head()
	wt := filepath.Join(t.TempDir(), "wt")
	repo.Git("worktree", "add", "--quiet", "--detach", "--lock", wt, base)
	w := &fixtures.Repo{T: t, Dir: wt}
	entry := filepath.Join(repo.CommonDir(), "worktrees", "wt")
	check := func(want bool) {
		t.Helper()
		got, err := PoolEntryExtra(entry, base)
		if err != nil || (got != "") != want {
			t.Errorf("extra %q, %v; want one: %v", got, err, want)
		}
	}
	check(false)
	repo.Git("reflog", "expire", "--expire=now", "--all") // as git gc does, in time
	check(false)
	w.Git("commit", "--quiet", "--allow-empty", "-m", "made there")
	w.Git("checkout", "--quiet", "--detach", base)
	if err := os.Remove(filepath.Join(entry, "COMMIT_EDITMSG")); err != nil {
		t.Fatal(err)
	}
	check(true) // only HEAD's reflog holds the commit
	w.Git("update-ref", "refs/worktree/x", base)
	check(true)
}
