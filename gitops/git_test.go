package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// TestEnvironmentIsolation: variables inherited from a git hook or alias
// must not aim git at another repository or index. Not parallel: it sets
// the process environment.
func TestEnvironmentIsolation(t *testing.T) {
	r := fixtures.NewRepo(t)
	other := fixtures.NewRepo(t)
	r.WriteFile("mine.txt", "x")
	fixtures.LeakGitEnv(t, other)

	repo, err := Discover(ctx, r.Dir)
	if err != nil || repo.Toplevel != r.Dir {
		t.Fatalf("Discover = %+v, %v; want %s", repo, err, r.Dir)
	}
	st, err := ReadStatus(ctx, r.Dir, StatusOptions{})
	if err != nil || len(st.Entries) != 1 || st.Entries[0].Path != "mine.txt" {
		t.Fatalf("ReadStatus = %+v, %v", st, err)
	}
	_, err = Discover(ctx, fixtures.TempDir(t))
	if !errors.Is(err, ErrNotARepository) {
		t.Errorf("classification needs LC_ALL=C; got %v", err)
	}
	env := strings.Join(environ(Cmd{ReadOnly: true}), "\n")
	for _, kv := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=", "GIT_OBJECT_DIRECTORY=", "GIT_LITERAL_PATHSPECS=", "LC_ALL=fr"} {
		if strings.Contains("\n"+env, "\n"+kv) {
			t.Errorf("environment keeps %s", kv)
		}
	}
	for _, kv := range []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0", "HOME=" + os.Getenv("HOME")} {
		if !strings.Contains("\n"+env+"\n", "\n"+kv+"\n") {
			t.Errorf("environment lacks %s", kv)
		}
	}
	if strings.Contains(strings.Join(environ(Cmd{}), "\n"), "GIT_OPTIONAL_LOCKS") {
		t.Errorf("a writing command runs with GIT_OPTIONAL_LOCKS set")
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	e := &Error{Dir: "/r", Args: []string{"update-ref", "refs/x", "a b", ""}, ExitCode: 128, Stderr: "fatal: nope", Err: ErrRefExists}
	want := `git in /r failed with exit status 128: fatal: nope`
	if e.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", e.Error(), want)
	}
	if got, want := e.Command(), `git update-ref refs/x "a b" ""`; got != want {
		t.Errorf("Command() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrRefExists) {
		t.Errorf("errors.Is(e, ErrRefExists) = false")
	}
	killed := &Error{Dir: "/r", Args: []string{"status"}, ExitCode: -1, Err: context.Canceled}
	if got := killed.Error(); got != "git in /r did not complete: context canceled" {
		t.Errorf("Error() = %q", got)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	c, cancel := context.WithCancel(ctx)
	cancel()
	_, err := ReadStatus(c, r.Dir, StatusOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ReadStatus with a canceled context: %v", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.ExitCode != -1 {
		t.Errorf("error %v: want an *Error with exit code -1", err)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	tests := map[string][]string{
		`git status`:                      {"git", "status"},
		`git -C "/a b" x`:                 {"git", "-C", "/a b", "x"},
		`git commit-tree -m "x\ny" ""`:    {"git", "commit-tree", "-m", "x\ny", ""},
		`git rev-parse HEAD^{commit} @`:   {"git", "rev-parse", "HEAD^{commit}", "@"},
		`git worktree add -- "it's" "$x"`: {"git", "worktree", "add", "--", "it's", "$x"},
	}
	for want, args := range tests {
		if got := shellQuote(args); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", args, got, want)
		}
	}
}

func TestPartialWorktreeEntryIsRecognised(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"fatal: failed to read worktrees/T-a/commondir: Success":                            true,
		"fatal: failed to read /tmp/x/repo/.git/worktrees/T-a/commondir: No such file":      true,
		"fatal: not a git repository (or any of the parent directories): .git":              false,
		"fatal: failed to read object 0123456789abcdef0123456789abcdef01234567: Bad object": false,
	} {
		if got := partialWorktreeEntry(msg); got != want {
			t.Errorf("partialWorktreeEntry(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestSubmodulesInProcessAgreesWithGit(t *testing.T) {
	t.Parallel()
	lib := fixtures.NewRepo(t)
	repo := fixtures.NewRepoAt(t, filepath.Join(fixtures.TempDir(t), "app"))
	repo.AddSubmodule("lib", lib)
	repo.AddSubmodule("deep/er lib", lib)
	got, err := Submodules(t.Context(), repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), repo.Dir, Cmd{ReadOnly: true}, "ls-files", "--stage", "-z")
	if err != nil {
		t.Fatal(err)
	}
	want, err := parseGitlinks(res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || len(got) != 2 {
		t.Errorf("submodules (-git +in process):\n%s", diff)
	}
}
