package provider

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// canExchange: this system can exchange two folders in one rename (the
// file system may still refuse; exchangeDirs then says so).
const canExchange = true

// exchangeDirs exchanges the folders a and b in one atomic rename.
func exchangeDirs(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errExchangeUnsupported
	}
	if err != nil {
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return nil
}

// renameNoReplace renames a to b unless b exists (os.ErrExist).
func renameNoReplace(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE: rename refuses a
		// folder over a non-empty one, and b is checked first.
		if _, lerr := os.Lstat(b); lerr == nil {
			return &os.LinkError{Op: "rename", Old: a, New: b, Err: os.ErrExist}
		}
		return os.Rename(a, b)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: err}
	}
	return nil
}
