package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestWorktreeLifecycle(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	base := fixtures.TempDir(t)
	spaced := filepath.Join(base, "with space", "T 14")
	plain := filepath.Join(base, "plain")
	gone := filepath.Join(base, "gone")

	if err := AddWorktree(ctx, repo.Dir, AddOptions{Path: spaced, Branch: "majlis/T-14", Commit: head, LockReason: "majlis: workspace T-14"}); err != nil {
		t.Fatal(err)
	}
	if err := AddWorktree(ctx, repo.Dir, AddOptions{Path: plain, Branch: "plain", Commit: head}); err != nil {
		t.Fatal(err)
	}
	if err := AddWorktree(ctx, repo.Dir, AddOptions{Path: gone, Branch: "gone", Commit: head, LockReason: "kept"}); err != nil {
		t.Fatal(err)
	}
	// A worktree that git does not lock, then loses its directory: prunable.
	lost := repo.AddWorktree(filepath.Join(base, "lost"), "lost")
	fixtures.Git(t, base, "-C", repo.Dir, "worktree", "add", "--quiet", "--detach", filepath.Join(base, "detached"), "HEAD")
	lost.Remove("")
	// A locked worktree whose directory is gone is not prunable.
	if err := removeAll(gone); err != nil {
		t.Fatal(err)
	}

	got, err := ListWorktrees(ctx, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Worktree{
		{Path: repo.Dir, Head: head, Branch: "refs/heads/main"},
		{Path: filepath.Join(base, "detached"), Head: head, Detached: true},
		{Path: gone, Head: head, Branch: "refs/heads/gone", Locked: true, LockReason: "kept"},
		{Path: filepath.Join(base, "lost"), Head: head, Branch: "refs/heads/lost",
			Prunable: true, PrunableReason: "gitdir file points to non-existent location"},
		{Path: plain, Head: head, Branch: "refs/heads/plain", Locked: true, LockReason: "added with --lock"},
		{Path: spaced, Head: head, Branch: "refs/heads/majlis/T-14", Locked: true, LockReason: "majlis: workspace T-14"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ListWorktrees mismatch (-want +got):\n%s", diff)
	}

	// The same list from inside a linked worktree.
	fromLinked, err := ListWorktrees(ctx, spaced)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, fromLinked); diff != "" {
		t.Errorf("ListWorktrees from a linked worktree mismatch (-want +got):\n%s", diff)
	}

	// The user's `git worktree prune` drops the unlocked entry whose
	// directory is gone, and keeps the locked one: AddWorktree always locks.
	fixtures.Git(t, repo.Dir, "worktree", "prune")
	got, err = ListWorktrees(ctx, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(paths(want[:3], want[4:]...), paths(got)); diff != "" {
		t.Errorf("after prune (-want +got):\n%s", diff)
	}

	// Removal: refused while locked, refused while dirty, then done.
	e := gitError(t, RemoveWorktree(ctx, repo.Dir, spaced, true), ErrWorktreeLocked)
	if !strings.Contains(e.Command(), "worktree remove --force -- ") || !strings.Contains(e.Error(), "locked") {
		t.Errorf("message %q should name the command and the reason", e.Error())
	}
	if err := UnlockWorktree(ctx, repo.Dir, spaced); err != nil {
		t.Fatal(err)
	}
	dirty := &fixtures.Repo{T: t, Dir: spaced}
	dirty.WriteFile("untracked.txt", "work\n")
	gitError(t, RemoveWorktree(ctx, repo.Dir, spaced, false), ErrWorktreeDirty)
	if err := RemoveWorktree(ctx, repo.Dir, spaced, true); err != nil {
		t.Fatal(err)
	}
	if exists(spaced) {
		t.Errorf("%s still exists after RemoveWorktree", spaced)
	}
	// The branch is kept.
	if got := repo.RevParse("refs/heads/majlis/T-14"); got != head {
		t.Errorf("branch majlis/T-14 = %s, want %s", got, head)
	}

	// Lock and unlock round trip.
	if err := LockWorktree(ctx, repo.Dir, plain, "again"); err == nil {
		t.Errorf("locking an already locked worktree succeeded")
	}
	if err := UnlockWorktree(ctx, repo.Dir, plain); err != nil {
		t.Fatal(err)
	}
	if err := LockWorktree(ctx, repo.Dir, plain, "again"); err != nil {
		t.Fatal(err)
	}
	got, err = ListWorktrees(ctx, repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		if w.Path == plain && (!w.Locked || w.LockReason != "again") {
			t.Errorf("after LockWorktree: %+v", w)
		}
	}
}

func paths(lists []Worktree, more ...Worktree) []string {
	var p []string
	for _, w := range append(append([]Worktree{}, lists...), more...) {
		p = append(p, w.Path)
	}
	return p
}

func TestAddWorktreeFailures(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	repo.Git("branch", "taken")
	existing := fixtures.TempDir(t)
	(&fixtures.Repo{T: t, Dir: existing}).WriteFile("file", "x")
	registered := filepath.Join(fixtures.TempDir(t), "registered")
	if err := AddWorktree(ctx, repo.Dir, AddOptions{Path: registered, Branch: "registered", Commit: head, LockReason: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := removeAll(registered); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		path, branch   string
		commit         string
		want           error
		directoryAfter bool
	}{
		{"branch exists", filepath.Join(fixtures.TempDir(t), "w"), "taken", head, ErrBranchExists, false},
		{"path exists", existing, "new1", head, ErrPathExists, true},
		{"path registered to a missing worktree", registered, "new2", head, ErrPathExists, false},
		{"unknown commit", filepath.Join(fixtures.TempDir(t), "w"), "new3", "no-such-commit", ErrUnknownRevision, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := AddWorktree(ctx, repo.Dir, AddOptions{Path: tt.path, Branch: tt.branch, Commit: tt.commit, LockReason: "r"})
			if tt.want != ErrBranchExists && branchExists(repo, tt.branch) {
				t.Errorf("branch %s was created", tt.branch)
			}
			e := gitError(t, err, tt.want)
			if e.ExitCode <= 0 || e.Stderr == "" {
				t.Errorf("error lacks exit code or stderr: %+v", e)
			}
			if exists(tt.path) != tt.directoryAfter {
				t.Errorf("directory %s exists = %v, want %v", tt.path, exists(tt.path), tt.directoryAfter)
			}
		})
	}
	if err := AddWorktree(ctx, repo.Dir, AddOptions{Branch: "b", Commit: head}); err == nil {
		t.Errorf("AddWorktree with an empty path succeeded")
	}
}

// TestAddWorktreeHookFails documents what a failing post-checkout hook
// leaves: an error, and the worktree and branch, for the caller to remove.
func TestAddWorktreeHookFails(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	repo.WriteExecutable(".git/hooks/post-checkout", "#!/bin/sh\necho hook says no >&2\nexit 3\n")
	path := filepath.Join(fixtures.TempDir(t), "w")
	err := AddWorktree(ctx, repo.Dir, AddOptions{Path: path, Branch: "hooked", Commit: repo.Head(), LockReason: "r"})
	var e *Error
	if !errorsAs(err, &e) || e.ExitCode == 0 || !strings.Contains(e.Stderr, "hook says no") {
		t.Fatalf("AddWorktree with a failing hook: %v", err)
	}
	if !exists(filepath.Join(path, ".git")) || !branchExists(repo, "hooked") {
		t.Errorf("expected the worktree and branch to remain for the caller")
	}
}

func TestParseWorktreeList(t *testing.T) {
	const id = "78ab8055022746ff01257016035ce28d7608104d"
	tests := []struct {
		name string
		in   string
		want []Worktree
		ok   bool
	}{
		{"empty", "", nil, true},
		{"main", "worktree /r\x00HEAD " + id + "\x00branch refs/heads/main\x00\x00",
			[]Worktree{{Path: "/r", Head: id, Branch: "refs/heads/main"}}, true},
		{"bare", "worktree /r.git\x00bare\x00\x00", []Worktree{{Path: "/r.git", Bare: true}}, true},
		{"locked without reason, prunable", "worktree /w\x00HEAD " + id + "\x00detached\x00locked\x00prunable gone\x00\x00",
			[]Worktree{{Path: "/w", Head: id, Detached: true, Locked: true, Prunable: true, PrunableReason: "gone"}}, true},
		{"odd path and reason", "worktree /a b\nc\x00HEAD " + id + "\x00branch refs/heads/x\x00locked why\nnot\x00\x00",
			[]Worktree{{Path: "/a b\nc", Head: id, Branch: "refs/heads/x", Locked: true, LockReason: "why\nnot"}}, true},
		{"HEAD without branch", "worktree /w\x00HEAD " + id + "\x00\x00", []Worktree{{Path: "/w", Head: id}}, true},
		{"unterminated record", "worktree /r\x00HEAD " + id + "\x00", nil, false},
		{"unterminated attribute", "worktree /r", nil, false},
		{"no worktree line", "HEAD " + id + "\x00\x00", nil, false},
		{"unknown attribute", "worktree /r\x00HEAD " + id + "\x00shiny\x00\x00", nil, false},
		{"out of order", "worktree /r\x00branch refs/heads/x\x00HEAD " + id + "\x00\x00", nil, false},
		{"repeated", "worktree /r\x00HEAD " + id + "\x00HEAD " + id + "\x00\x00", nil, false},
		{"short HEAD", "worktree /r\x00HEAD 78ab\x00\x00", nil, false},
		{"short branch", "worktree /r\x00HEAD " + id + "\x00branch main\x00\x00", nil, false},
		{"bare with HEAD", "worktree /r\x00bare\x00HEAD " + id + "\x00\x00", nil, false},
		{"neither bare nor HEAD", "worktree /r\x00detached\x00\x00", nil, false},
		{"empty record", "\x00", nil, false},
		{"locked with empty reason", "worktree /r\x00HEAD " + id + "\x00locked \x00\x00", nil, false},
		{"detached with value", "worktree /r\x00HEAD " + id + "\x00detached yes\x00\x00", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWorktreeList([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("parseWorktreeList(%q) error = %v, want ok %v", tt.in, err, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseWorktreeList(f *testing.F) {
	const id = "78ab8055022746ff01257016035ce28d7608104d"
	f.Add([]byte("worktree /r\x00HEAD " + id + "\x00branch refs/heads/main\x00\x00worktree /w t\x00HEAD " + id + "\x00detached\x00locked because\x00prunable gitdir file points to non-existent location\x00\x00"))
	f.Add([]byte("worktree /r.git\x00bare\x00\x00"))
	f.Add([]byte("worktree /w\x00HEAD " + id + "\x00locked\x00\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		list, err := parseWorktreeList(in)
		if err != nil {
			return
		}
		var out []byte
		for _, w := range list {
			out = appendWorktreeRecord(out, w)
		}
		if string(out) != string(in) {
			t.Fatalf("round trip:\nin  %q\nout %q", in, out)
		}
	})
}

// A sibling entry that a concurrent `git worktree add` is still writing
// (its commondir exists but is empty) makes git die before it creates
// anything; AddWorktree tries again, and succeeds once the entry is whole.
func TestAddWorktreeRetriesHalfWrittenSibling(t *testing.T) {
	repo := fixtures.NewRepo(t)
	entry := filepath.Join(repo.Dir, ".git", "worktrees", "sibling")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	sibling := filepath.Join(fixtures.TempDir(t), "sibling")
	for name, data := range map[string]string{"gitdir": sibling + "/.git\n", "HEAD": "ref: refs/heads/sib\n", "commondir": ""} {
		if err := os.WriteFile(filepath.Join(entry, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	head := repo.Head()
	// The concurrent writer finishes the entry once git has died on it:
	// exactly then, not after a guessed moment.
	retries := 0
	var finished error
	testHookPartialEntry = func(int) {
		if retries++; retries == 1 {
			finished = os.WriteFile(filepath.Join(entry, "commondir"), []byte("../..\n"), 0o644)
		}
	}
	t.Cleanup(func() { testHookPartialEntry = nil })
	path := filepath.Join(fixtures.TempDir(t), "ws")
	if err := AddWorktree(t.Context(), repo.Dir, AddOptions{Path: path, Branch: "nb", Commit: head}); err != nil {
		t.Fatalf("AddWorktree beside a half-written entry: %v", err)
	}
	if finished != nil {
		t.Fatal(finished)
	}
	if retries == 0 {
		t.Fatalf("git did not die on the half-written entry: the retry was not exercised")
	}
	if got := strings.TrimSpace(repo.Git("rev-parse", "refs/heads/nb")); got != head {
		t.Errorf("branch nb at %s, want %s", got, head)
	}
}
