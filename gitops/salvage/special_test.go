package salvage

import (
	"os"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// git passes special files by without a word; SpecialFiles finds them
// wherever a deletion of the worktree would reach.
func TestSpecialFiles(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteGitignore("build/")
	r.WriteFile("a.txt", "a\n")
	r.Commit("files")
	r.SpecialFile("pipe", "fifo")
	r.SpecialFile("build/server.sock", "socket")
	r.SpecialFile("deep/er/p2", "fifo")
	r.WriteFile("deep/file", "f\n")
	r.Symlink("pipe", "link-to-pipe")
	r.NestedRepo("nested").SpecialFile("run/ipc", "socket")
	want := []SpecialFile{{Path: "build/server.sock", Type: "socket"}, {Path: "deep/er/p2", Type: "fifo"}, {Path: "nested/run/ipc", Type: "socket"}, {Path: "pipe", Type: "fifo"}}
	// A device node needs privilege to make.
	if err := syscall.Mknod(r.Path("null"), syscall.S_IFCHR|0o600, 1<<8|3); err == nil {
		want = append(want[:3], SpecialFile{Path: "null", Type: "char_device"}, want[3])
	} else if !os.IsPermission(err) {
		t.Fatal(err)
	}
	n, got, err := SpecialFiles(r.Dir, -1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || n != len(want) {
		t.Errorf("SpecialFiles = %d (-want +got):\n%s", n, diff)
	}
	n, got, err = SpecialFiles(r.Dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[:2], got); diff != "" || n != len(want) {
		t.Errorf("SpecialFiles limited to 2 = %d (-want +got):\n%s", n, diff)
	}

	clean := fixtures.NewRepo(t)
	n, got, err = SpecialFiles(clean.Dir, 10)
	if err != nil || n != 0 || got == nil || len(got) != 0 {
		t.Errorf("SpecialFiles of a clean worktree = %d, %#v, %v; want 0, [], nil", n, got, err)
	}
}

// The walk a preview adds, on a 20,000-file worktree.
func BenchmarkSpecialFiles(b *testing.B) {
	r := fixtures.GenerateLarge(b, fixtures.Smaller(20000, 500))
	for b.Loop() {
		if _, _, err := SpecialFiles(r.Dir, 100); err != nil {
			b.Fatal(err)
		}
	}
}
