package gitops

import (
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

func TestMergedInto(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.Git("checkout", "-q", "-b", "topic")
	r.WriteFile("a.txt", "a\n")
	r.Git("add", "a.txt")
	r.Git("commit", "-q", "-m", "a")
	r.WriteFile("b.txt", "b\n")
	r.Git("add", "b.txt")
	r.Git("commit", "-q", "-m", "b")
	topic := r.Head()
	r.Git("checkout", "-q", "main")
	base := r.Head()

	// A branch with the same change as a squash, then more on top.
	r.Git("checkout", "-q", "-b", "squashed", base)
	r.Git("merge", "-q", "--squash", "topic")
	r.Git("commit", "-q", "-m", "squash of topic")
	squashTree := r.Head()
	r.WriteFile("c.txt", "c\n")
	r.Git("add", "c.txt")
	r.Git("commit", "-q", "-m", "c")
	squashed := r.Head()
	// The same change, squashed after another commit changed something
	// else first: only the patch-id finds it.
	r.Git("checkout", "-q", "-b", "later", base)
	r.WriteFile("d.txt", "d\n")
	r.Git("add", "d.txt")
	r.Git("commit", "-q", "-m", "d")
	r.Git("merge", "-q", "--squash", "topic")
	r.Git("commit", "-q", "-m", "squash of topic after d")
	later := r.Head()
	// Half of the change only: not merged.
	r.Git("checkout", "-q", "-b", "half", base)
	r.WriteFile("a.txt", "a\n")
	r.Git("add", "a.txt")
	r.Git("commit", "-q", "-m", "a only")
	half := r.Head()
	// A fast-forward.
	r.Git("checkout", "-q", "-b", "ff", topic)
	r.WriteFile("e.txt", "e\n")
	r.Git("add", "e.txt")
	r.Git("commit", "-q", "-m", "e")
	ff := r.Head()

	reader, err := OpenReader(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, target, want string
	}{
		{"fast-forwarded", ff, MergedAncestor},
		{"squashed, nothing between", squashTree, MergedTree},
		{"squashed, then more", squashed, MergedTree}, // the squash commit has the tip's tree
		{"squashed after another change", later, MergedPatchID},
		{"half of it", half, ""},
		{"the base itself", base, ""},
	} {
		got, err := reader.MergedInto(ctx, topic, tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: MergedInto = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestUpstream(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.Git("branch", "topic")
	r.Git("branch", "tracking")
	r.Git("branch", "--set-upstream-to=topic", "tracking")
	reader, err := OpenReader(t.Context(), r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for branch, want := range map[string]string{"topic": "", "tracking": "refs/heads/topic"} {
		got, err := reader.Upstream(t.Context(), branch)
		if err != nil || got != want {
			t.Errorf("Upstream(%q) = %q, %v; want %q", branch, got, err, want)
		}
	}
	if _, err := reader.Upstream(t.Context(), "a b"); err == nil {
		t.Errorf("Upstream of a bad name did not refuse")
	}
}
