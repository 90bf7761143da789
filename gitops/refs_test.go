package gitops

import (
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestRefUpdates(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	first := r.Head()
	second := r.Commit("second")
	const ref = "refs/majlis/salvage/T-14/1"

	if err := UpdateRefCreate(ctx, r.Dir, ref, first); err != nil {
		t.Fatal(err)
	}
	e := gitError(t, UpdateRefCreate(ctx, r.Dir, ref, second), ErrRefExists)
	if e.ExitCode != 128 || !strings.Contains(e.Stderr, "reference already exists") ||
		e.Command() != "git update-ref --no-deref "+ref+" "+second+` ""` || strings.Contains(e.Error(), "update-ref") {
		t.Errorf("error %q (exit %d) should carry the command (Command, not the message), the exit code and git's stderr", e.Error(), e.ExitCode)
	}
	if got := r.RevParse(ref); got != first {
		t.Fatalf("a refused create moved %s to %s", ref, got)
	}

	// Compare-and-swap.
	gitError(t, UpdateRef(ctx, r.Dir, ref, second, second), ErrRefChanged)
	if err := UpdateRef(ctx, r.Dir, ref, second, first); err != nil {
		t.Fatal(err)
	}
	if got := r.RevParse(ref); got != second {
		t.Fatalf("%s = %s, want %s", ref, got, second)
	}

	// Delete only at the expected value.
	gitError(t, DeleteRef(ctx, r.Dir, ref, first), ErrRefChanged)
	if err := DeleteRef(ctx, r.Dir, ref, second); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryGit("rev-parse", "--verify", "-q", ref); err == nil {
		t.Fatalf("%s still exists", ref)
	}
	gitError(t, DeleteRef(ctx, r.Dir, ref, second), ErrRefChanged)
	gitError(t, UpdateRef(ctx, r.Dir, ref, second, first), ErrRefChanged)

	// Arguments are checked before git runs.
	for _, tc := range []struct{ ref, new, old string }{
		{"HEAD", first, ""},
		{"majlis/x", first, ""},
		{ref, "HEAD", ""},
		{ref, first[:7], ""},
		{ref, first, "HEAD"},
	} {
		if err := UpdateRef(ctx, r.Dir, tc.ref, tc.new, tc.old); err == nil {
			t.Errorf("UpdateRef(%q, %q, %q) succeeded", tc.ref, tc.new, tc.old)
		}
	}
	if err := DeleteRef(ctx, r.Dir, "refs/heads/main", ""); err == nil {
		t.Errorf("DeleteRef without an old value succeeded")
	}
	if got := r.Head(); got != second {
		t.Errorf("HEAD moved")
	}
}

func TestRefUpdatesFromLinkedWorktree(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	w := r.NewWorktree("w")
	if err := UpdateRefCreate(ctx, w.Dir, "refs/majlis/x", w.Head()); err != nil {
		t.Fatal(err)
	}
	// refs/majlis/ is shared by all worktrees.
	if got := r.RevParse("refs/majlis/x"); got != w.Head() {
		t.Errorf("refs/majlis/x seen from the main worktree = %s", got)
	}
}
