package gitops

import (
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// A file-system monitor that missed an edit must not hide it from the
// salvage or the preview's status: majlis reads the files itself.
func TestStaleFSMonitorHidesNothing(t *testing.T) {
	r := fixtures.NewRepo(t)
	r.WriteFile("a.txt", "a\n")
	r.Commit("a")
	r.StaleFSMonitor()
	r.WriteFile("a.txt", "edited, and the monitor never said so\n")
	if out := r.Git("status", "--porcelain"); strings.Contains(out, "a.txt") {
		t.Skipf("this git does not trust the monitor's answer: %q", out)
	}
	st, err := ReadStatus(t.Context(), r.Dir, StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Counts(); n.Modified != 1 {
		t.Errorf("status counts %+v; want a.txt modified", n)
	}
	snap, err := Snapshot(t.Context(), r.Dir, "salvage")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Clean {
		t.Fatal("the snapshot calls the worktree clean")
	}
	if got := r.Git("cat-file", "-p", snap.Commit+":a.txt"); got != "edited, and the monitor never said so\n" {
		t.Errorf("salvaged a.txt = %q", got)
	}
}
