package reservation

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrExists: Publish found the name already taken.
var ErrExists = errors.New("reservation: file already published")

// Publish writes data to dir/name with the same no-clobber protocol as a
// lease: a complete temporary file is written and fsynced, then hard-linked
// to the name, so the name either does not exist or holds the complete
// data, and an existing name is never overwritten (ErrExists). The
// directory is fsynced before Publish returns. It is how immutable records
// (claims, events) are published.
func Publish(dir, name string, data []byte) error {
	return writeDurable(dir, name, data, false)
}

// Replace atomically replaces dir/name with data: temporary file, fsync,
// rename, fsync of the directory. Readers see the old or the new content,
// never a mixture. It is for mutable records that are read whole.
func Replace(dir, name string, data []byte) error {
	return writeDurable(dir, name, data, true)
}

func writeDurable(dir, name string, data []byte, replace bool) error {
	op := "publish"
	if replace {
		op = "replace"
	}
	target := filepath.Join(dir, name)
	if name == "" || name != filepath.Base(name) || name[0] == '.' {
		return &Error{Op: op, Path: target, Reason: "invalid file name", Err: ErrInvalid}
	}
	tmp := filepath.Join(dir, "."+name+"."+newToken()[:16]+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &Error{Op: op, Path: tmp, Err: err}
	}
	defer os.Remove(tmp)
	defer f.Close()
	// The lock marks the temporary file as in use for Dir.Sweep.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return &Error{Op: op, Path: tmp, Err: err}
	}
	if _, err := f.Write(data); err != nil {
		return &Error{Op: op, Path: tmp, Err: err}
	}
	if err := f.Sync(); err != nil {
		return &Error{Op: op, Path: tmp, Err: err}
	}
	if replace {
		err = os.Rename(tmp, target)
	} else {
		err = os.Link(tmp, target)
		if err != nil && !errors.Is(err, os.ErrExist) && sameFile(f, target) {
			err = nil // the link happened despite the error
		}
	}
	if errors.Is(err, os.ErrExist) {
		return &Error{Op: op, Path: target, Err: ErrExists}
	}
	if err != nil {
		return &Error{Op: op, Path: target, Err: err}
	}
	if err := syncPath(dir); err != nil {
		return &Error{Op: op, Path: dir, Err: err}
	}
	return nil
}
