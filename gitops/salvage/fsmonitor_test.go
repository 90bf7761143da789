package salvage

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// A file-system monitor that missed an edit must not hide it from the
// salvage or the preview's status: majlis reads the files itself.
func TestStaleFSMonitorHidesNothing(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("a.txt", "a\n")
	r.Commit("a")
	r.StaleFSMonitor()
	r.WriteFile("a.txt", "edited, and the monitor never said so\n")
	if out := r.Git("status", "--porcelain"); strings.Contains(out, "a.txt") {
		t.Skipf("this git does not trust the monitor's answer: %q", out)
	}
	checkEditSeen(t, r, "edited, and the monitor never said so\n")
}

// With core.trustctime=false (or core.checkStat=minimal) git trusts a
// file whose size and modification time match its index entry; an edit
// that kept both must still be salvaged.
func TestEditKeepingSizeAndTimeIsSeen(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("a.txt", "aaaa\n")
	r.Commit("a")
	r.Config("core.trustctime", "false")
	r.Config("core.checkStat", "minimal")
	fi, err := os.Stat(r.Path("a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The index entry's time must be older than the index file, or git
	// re-reads the file anyway ("racy git").
	old := fi.ModTime().Add(-time.Hour)
	if err := os.Chtimes(r.Path("a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	recorded := ctimeSecond(t, r.Path("a.txt"))
	r.Git("update-index", "--really-refresh")
	// git compares change times to the second, and the file system stamps
	// them from a coarse clock: write until the edit's change time is in
	// a later second than the one the index recorded.
	for deadline := time.Now().Add(5 * time.Second); ; {
		r.WriteFile("a.txt", "bbbb\n")
		if err := os.Chtimes(r.Path("a.txt"), old, old); err != nil {
			t.Fatal(err)
		}
		if ctimeSecond(t, r.Path("a.txt")) != recorded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the file's change time did not move on")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out := r.Git("status", "--porcelain"); out != "" {
		t.Skipf("this git sees the edit by itself: %q", out)
	}
	checkEditSeen(t, r, "bbbb\n")
}

func ctimeSecond(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ctim.Sec
}

// checkEditSeen fails the test unless majlis's status counts a.txt as
// modified and a salvage keeps it with content want, although plain git
// (as the caller checked) does not see the edit.
func checkEditSeen(t *testing.T, r *fixtures.Repo, want string) {
	t.Helper()
	st, err := gitops.ReadStatus(t.Context(), r.Dir, gitops.StatusOptions{})
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
	if got := r.Git("cat-file", "-p", snap.Commit+":a.txt"); got != want {
		t.Errorf("salvaged a.txt = %q", got)
	}
}
