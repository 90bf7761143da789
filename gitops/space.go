package gitops

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// TreeSize returns the disk space the directory tree at dir takes (the
// blocks of every file and folder in it, as du counts them), without
// following a symbolic link or crossing into another file system. A
// file deleted while it is walked is skipped.
func TreeSize(dir string) (int64, error) {
	var top unix.Stat_t
	if err := unix.Lstat(dir, &top); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return &os.PathError{Op: "lstat", Path: path, Err: err}
		}
		if d.IsDir() && st.Dev != top.Dev {
			return filepath.SkipDir
		}
		total += st.Blocks * 512
		return nil
	})
	return total, err
}

// FreeSpace returns the space free to an unprivileged user on the file
// system holding path, and that file system's size, in bytes.
func FreeSpace(path string) (free, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, 0, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
