package salvage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/gitops"
)

// writeNoFollow writes below its folder only: never through a symbolic
// link, never over an existing file.
func TestWriteNoFollow(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := writeNoFollow(dir, "link/escape.txt", gitops.ModeFile, []byte("x")); err == nil {
		t.Error("wrote through a symbolic link")
	}
	if _, err := os.Lstat(filepath.Join(outside, "escape.txt")); err == nil {
		t.Error("a file appeared outside the folder")
	}
	if err := writeNoFollow(dir, "a/b/c.sh", gitops.ModeExecutable, []byte("run")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "a/b/c.sh"))
	if err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("a/b/c.sh: %v, mode %v; want an executable file", err, fi)
	}
	if err := writeNoFollow(dir, "a/b/c.sh", gitops.ModeFile, []byte("other")); err == nil {
		t.Error("replaced an existing file")
	}
	if err := writeNoFollow(dir, "a/l", gitops.ModeSymlink, []byte("b/c.sh")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "a/l")); err != nil || target != "b/c.sh" {
		t.Errorf("a/l -> %q, %v", target, err)
	}
}
