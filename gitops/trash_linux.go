package gitops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MoveDir renames the directory from to to with one rename(2) that never
// replaces anything (renameat2 with RENAME_NOREPLACE): if to exists the
// move fails with an error satisfying errors.Is(err, fs.ErrExist), and a
// move across file systems fails with ErrCrossDevice. Both parent
// directories are fsynced afterwards, so the move is durable when MoveDir
// returns. Nothing is created: to's parent must exist.
func MoveDir(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case errors.Is(err, unix.EXDEV):
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fmt.Errorf("%w (%v)", ErrCrossDevice, err)}
	case err != nil:
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	for _, dir := range []string{filepath.Dir(from), filepath.Dir(to)} {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// ErrCrossDevice means a move would cross file systems (a bind mount at
// the source, say). Nothing is ever copied across: the move is refused.
var ErrCrossDevice = errors.New("gitops: the move would cross file systems")
