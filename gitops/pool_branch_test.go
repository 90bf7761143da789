package gitops

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestPutHeadOnBranch: a new branch is created at the detached HEAD's
// commit and HEAD put on it, HEAD's reflog as git worktree add writes it, the index untouched; a branch that exists is refused (ErrRefExists)
// and neither it nor HEAD moves; an existing branch at the commit is
// checked out.
func TestPutHeadOnBranch(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	repo.WriteFile("other.txt", "other\n")
	other := repo.Commit("other")
	wt := filepath.Join(fixtures.TempDir(t), "wt")
	repo.Git("worktree", "add", "-q", "--detach", wt, head)
	index := fixtures.Git(t, wt, "ls-files", "--stage", "--debug")

	repo.Git("branch", "taken", other)
	if err := PutHeadOnBranch(t.Context(), wt, "taken", head, true); !errors.Is(err, ErrRefExists) {
		t.Fatalf("an existing branch: %v, want ErrRefExists", err)
	}
	if got := strings.TrimSpace(repo.Git("rev-parse", "taken")); got != other {
		t.Errorf("the existing branch moved to %s", got)
	}
	if _, err := fixtures.GitStdin(t, wt, nil, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Errorf("HEAD is on a branch after the refusal")
	}

	if err := PutHeadOnBranch(t.Context(), wt, "majlis/T-1", head, true); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(fixtures.Git(t, wt, "symbolic-ref", "HEAD")); got != "refs/heads/majlis/T-1" {
		t.Errorf("HEAD is %s", got)
	}
	if got := strings.TrimSpace(repo.Git("rev-parse", "majlis/T-1")); got != head {
		t.Errorf("the new branch is at %s, want %s", got, head)
	}
	if got := fixtures.Git(t, wt, "ls-files", "--stage", "--debug"); got != index {
		t.Errorf("the index changed")
	}
	if log := fixtures.Git(t, wt, "reflog", "-1", "--format=%gs", "HEAD"); log != "reset: moving to HEAD\n" { // as git worktree add writes it
		t.Errorf("HEAD's reflog: %q", log)
	}
	if st := fixtures.Git(t, wt, "status", "--porcelain", "--ignored", "-uall"); st != "" {
		t.Errorf("status: %q", st)
	}

	wt2 := filepath.Join(fixtures.TempDir(t), "wt2")
	repo.Git("worktree", "add", "-q", "--detach", wt2, other)
	if err := PutHeadOnBranch(t.Context(), wt2, "taken", other, false); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(fixtures.Git(t, wt2, "symbolic-ref", "HEAD")); got != "refs/heads/taken" {
		t.Errorf("HEAD of the checkout is %s", got)
	}
}
