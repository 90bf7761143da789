package pathid

import (
	"fmt"
	"io/fs"
	"os"
)

// A FileID identifies a file on this machine by device and inode number:
// two paths name the same file exactly when their FileIDs are equal, however
// the paths are spelled (symlinks, bind mounts, hard links, case variants).
//
// A FileID is only meaningful while the file exists: once it is deleted the
// inode number can be reused, so a caller that recorded one must compare it
// again right before acting on the path.
type FileID struct {
	Dev uint64 // the device (file system) holding the file
	Ino uint64 // the inode number within that device
}

// Equal reports whether id and other identify the same file. The zero
// FileID stands for an identity that was never established and equals
// nothing, not even itself, so an unverified identity never passes a check.
func (id FileID) Equal(other FileID) bool {
	return !id.IsZero() && id == other
}

// IsZero reports whether id is the zero FileID. Inode number 0 is never a
// valid file, so no real file has it.
func (id FileID) IsZero() bool { return id.Ino == 0 }

// String formats id as "dev:ino", for messages.
func (id FileID) String() string { return fmt.Sprintf("%d:%d", id.Dev, id.Ino) }

// FileIDOf returns the identity of the file fi describes. fi must come from
// os.Stat, os.Lstat or (*os.File).Stat; otherwise, or when the file system
// reports no inode number, it fails with ErrNoIdentity.
func FileIDOf(fi fs.FileInfo) (FileID, error) {
	id, ok := sysFileID(fi)
	if !ok || id.IsZero() {
		return FileID{}, &Error{Op: "stat", Path: fi.Name(), Kind: ErrNoIdentity}
	}
	return id, nil
}

// Stat returns the identity of the file at path, following symlinks: a
// symlink yields the identity of its target.
func Stat(path string) (FileID, error) {
	return identify("stat", path, os.Stat)
}

// Lstat returns the identity of the file at path without following a final
// symlink: a symlink yields the identity of the link itself. Use it to
// check that a directory recorded earlier has not been replaced by a
// symlink to somewhere else.
func Lstat(path string) (FileID, error) {
	return identify("lstat", path, os.Lstat)
}

func identify(op, path string, stat func(string) (fs.FileInfo, error)) (FileID, error) {
	if err := validate(op, path); err != nil {
		return FileID{}, err
	}
	fi, err := stat(path)
	if err != nil {
		return FileID{}, osError(op, path, err)
	}
	id, ok := sysFileID(fi)
	if !ok || id.IsZero() {
		return FileID{}, &Error{Op: op, Path: path, Kind: ErrNoIdentity}
	}
	return id, nil
}

// LinkCount returns the number of hard links to the regular file at path,
// without following a final symlink. A count above 1 means the same file
// is reachable under another name, possibly outside any root the caller
// checked, which is why admission refuses such files. Anything but a
// regular file fails with ErrNotRegular: a directory's count reflects its
// subdirectories, not aliases.
func LinkCount(path string) (uint64, error) {
	const op = "link count"
	if err := validate(op, path); err != nil {
		return 0, err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, osError(op, path, err)
	}
	if !fi.Mode().IsRegular() {
		return 0, &Error{Op: op, Path: path, Reason: "it is a " + kindOf(fi.Mode()), Kind: ErrNotRegular}
	}
	n, ok := sysNlink(fi)
	if !ok {
		return 0, &Error{Op: op, Path: path, Kind: ErrNoIdentity}
	}
	return n, nil
}

func kindOf(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeDir:
		return "directory"
	case fs.ModeSymlink:
		return "symlink"
	case fs.ModeNamedPipe:
		return "named pipe"
	case fs.ModeSocket:
		return "socket"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "device"
	}
	return "special file"
}
