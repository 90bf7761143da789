package durable

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// MoveDir renames the directory from to to with one rename(2) that never
// replaces anything (renameat2 with RENAME_NOREPLACE): if to exists the
// move fails with an error satisfying errors.Is(err, fs.ErrExist), and a
// move across file systems (or of a mount point) fails with
// ErrCrossDevice. Both parent
// directories (one, when they are the same) are fsynced afterwards, so the move is durable when MoveDir
// returns. Nothing is created: to's parent must exist.
func MoveDir(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case errors.Is(err, unix.EXDEV), errors.Is(err, unix.EBUSY):
		// EBUSY: from is a mount point (a bind mount of itself, say),
		// which no rename can move either.
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fmt.Errorf("%w (%v)", ErrCrossDevice, err)}
	case err != nil:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	dirs := []string{filepath.Dir(from), filepath.Dir(to)}
	if dirs[0] == dirs[1] {
		dirs = dirs[:1] // a rename within one directory: one fsync of it
	}
	for _, dir := range dirs {
		if err := SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// ErrCrossDevice means a move would cross file systems (a bind mount at
// the source, say). Nothing is ever copied across: the move is refused.
var ErrCrossDevice = wire.Sentinel("git_failed", "gitops: the move would cross file systems")

// MountPoint reports whether path (not followed if a symbolic link) is
// the root of a mount: a rename cannot move it (statx's
// STATX_ATTR_MOUNT_ROOT; a kernel too old to say reports false, and the
// rename itself then refuses).
func MountPoint(path string) (bool, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &st); err != nil {
		return false, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	return st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
}

// mountRoot reports whether the open directory fd is the root of a mount
// (statx's STATX_ATTR_MOUNT_ROOT); a kernel too old to say reports false.
func mountRoot(fd int) bool {
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, &st); err != nil {
		return false
	}
	return st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}
