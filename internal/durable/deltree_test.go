package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func dirID(t *testing.T, path string) DirIdentity {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return DirIdentity{Dev: uint64(st.Dev), Ino: st.Ino}
}

// MoveDir renames once, never over anything, and refuses to cross file
// systems (a copy is never made).
func TestMoveDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src, dst := filepath.Join(root, "ws"), filepath.Join(root, ".trash-ws")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := dirID(t, src)
	if err := MoveDir(src, dst); err != nil {
		t.Fatal(err)
	}
	if got := dirID(t, dst); got != id {
		t.Errorf("moved directory %v, want %v", got, id)
	}
	// Never replaces: not a directory, not an empty one.
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MoveDir(dst, src); !errors.Is(err, fs.ErrExist) {
		t.Errorf("MoveDir onto an existing empty directory: %v, want fs.ErrExist", err)
	}
	if got := dirID(t, dst); got != id {
		t.Errorf("a refused move changed the source")
	}
	// Across file systems: refused, nothing moved.
	if shm, err := os.MkdirTemp("/dev/shm", "majlis-trash-test-"); err == nil {
		defer os.RemoveAll(shm)
		if dirID(t, shm).Dev != id.Dev {
			if err := MoveDir(dst, filepath.Join(shm, "ws")); !errors.Is(err, ErrCrossDevice) {
				t.Errorf("MoveDir across file systems: %v, want ErrCrossDevice", err)
			}
			if got := dirID(t, dst); got != id {
				t.Errorf("a move across file systems changed the source")
			}
		}
	}
}

// DeleteTree deletes only the directory it was told (by identity), never
// follows a link inside, and empties read-only folders.
func TestDeleteTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "trash")
	for _, d := range []string{"a/b/c", "ro/inner", ".git-dir"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".git", "a/b/c/f.txt", "ro/inner/g.txt", "top.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "ro", "inner"), 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "ro"), 0o500); err != nil {
		t.Fatal(err)
	}
	id := dirID(t, dir)

	// Another identity: nothing deleted.
	if err := DeleteTree(dir, DirIdentity{Dev: id.Dev, Ino: id.Ino + 1}); !errors.Is(err, ErrNotSameDir) {
		t.Fatalf("DeleteTree of another directory: %v, want ErrNotSameDir", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "top.txt")); err != nil {
		t.Fatalf("a refused DeleteTree deleted something: %v", err)
	}
	// A symlink at the path: refused too.
	link := filepath.Join(root, "link-to-trash")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := DeleteTree(link, id); !errors.Is(err, ErrNotSameDir) {
		t.Fatalf("DeleteTree through a symlink: %v, want ErrNotSameDir", err)
	}

	if err := DeleteTree(dir, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the directory is still there: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep.txt")); err != nil || string(b) != "keep\n" {
		t.Errorf("a file behind a symlink inside was touched: %q, %v", b, err)
	}
	// Finishing a deletion that is done is not an error.
	if err := DeleteTree(dir, id); err != nil {
		t.Errorf("DeleteTree of a deleted directory: %v", err)
	}
}

// A file system mounted inside the tree (a bind mount of someone's data)
// is not deleted with it: DeleteTree refuses at the mount, and what is
// mounted there is untouched. Needs the right to mount; skipped otherwise.
func TestDeleteTreeStopsAtMounts(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	root := t.TempDir()
	data, tree := filepath.Join(root, "data"), filepath.Join(root, "tree")
	for _, d := range []string{data, filepath.Join(tree, "mnt")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "precious"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "file"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(tree, "mnt")
	if err := syscall.Mount(data, mnt, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	err := DeleteTree(tree, dirID(t, tree))
	if !errors.Is(err, ErrCrossDevice) {
		t.Fatalf("DeleteTree of a tree with a mount inside: %v, want ErrCrossDevice", err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "precious")); err != nil || string(b) != "keep\n" {
		t.Fatalf("the mounted file system's file: %q, %v", b, err)
	}
}
