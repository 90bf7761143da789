package gitops

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

func TestChangedPaths(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	for _, f := range []string{"modified", "renamed", "deleted"} {
		r.WriteFile(f+".txt", f+"\n")
	}
	r.WriteGitignore("*.log")
	r.Commit("files")
	r.WriteFile("modified.txt", "changed\n")
	r.Git("mv", "renamed.txt", "renamed-to.txt")
	r.Remove("deleted.txt")
	r.WriteFile("untracked/file.txt", "u\n")
	r.WriteFile("debug.log", "ignored\n")

	st, err := ReadStatus(ctx, r.Dir, StatusOptions{Ignored: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"deleted.txt", "modified.txt", "renamed-to.txt", "renamed.txt", "untracked/file.txt"}
	if diff := cmp.Diff(want, st.ChangedPaths()); diff != "" {
		t.Errorf("ChangedPaths (-want +got):\n%s", diff)
	}
	clean := &Status{}
	if got := clean.ChangedPaths(); got == nil || len(got) != 0 {
		t.Errorf("a clean status: %#v, want an empty list", got)
	}
}
