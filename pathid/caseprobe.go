package pathid

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CaseInsensitive reports whether the file system holding the directory
// dir treats names that differ only in ASCII letter case as the same name.
// It does not assume anything from the operating system: it creates a
// uniquely named, mixed-case empty file in dir, looks up the same name with
// the case of every letter swapped, and removes the file again. dir must
// therefore be writable.
//
// The answer holds for dir only: case folding can differ between mounts,
// and on Linux even between directories of one file system (ext4 and f2fs
// casefold is a per-directory attribute). When the probe fails the answer
// is unknown, and a caller deciding whether two spellings are one resource
// should treat the error as "not positively identified".
func CaseInsensitive(dir string) (insensitive bool, err error) {
	const op = "case probe"
	if err := validate(op, dir); err != nil {
		return false, err
	}
	f, err := os.CreateTemp(dir, ".pathid-CaseProbe-*")
	if err != nil {
		return false, &Error{Op: op, Path: dir, Reason: "creating the probe file", Err: err}
	}
	name := f.Name()
	defer func() {
		// The probe must not leave litter in the caller's directory; a
		// failure to clean up is reported, not swallowed.
		if rmErr := os.Remove(name); rmErr != nil {
			err = errors.Join(err, &Error{Op: op, Path: dir, Reason: "removing the probe file", Err: rmErr})
			insensitive = false
		}
	}()
	fi, err := f.Stat()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return false, &Error{Op: op, Path: dir, Reason: "reading the probe file", Err: err}
	}
	probe, err := FileIDOf(fi)
	if err != nil {
		return false, err
	}

	swapped := filepath.Join(dir, swapCase(filepath.Base(name)))
	fi, err = os.Lstat(swapped)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, &Error{Op: op, Path: dir, Reason: "looking up the case-swapped name", Err: err}
	}
	id, err := FileIDOf(fi)
	if err != nil {
		return false, err
	}
	// Another file that happens to carry the swapped name would also be
	// found; only the probe file itself proves the names are folded.
	return id.Equal(probe), nil
}

// swapCase swaps the case of every ASCII letter in s.
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}
