package durable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// gitops/delete-partial (its name older than this package, kept for the
// scripts and docs that name it): DeleteTree has deleted about half of the
// top level of a tree (tests kill it there to leave a half-deleted tree).
var fpDeletePartial = failpoint.New("gitops/delete-partial")

// A DirIdentity is the device and inode of a directory, as recorded when
// it was created.
type DirIdentity struct{ Dev, Ino uint64 }

// ErrNotSameDir means the directory at a path is not the one expected.
var ErrNotSameDir = wire.Sentinel("git_failed", "gitops: not the expected directory")

// DeleteTree deletes the directory dir and everything in it, provided dir
// is, at the moment it is opened, a directory (not a symbolic link) with
// identity id; otherwise it deletes nothing and returns an error wrapping
// ErrNotSameDir. A dir that does not exist is not an error: a deletion
// interrupted after its last step is finished.
//
// Below dir, nothing is followed: every directory is opened relative to
// its parent's descriptor with O_NOFOLLOW. Directories without write or
// search permission are given it (to their owner) first, as they must be
// to be emptied. If dir's top level holds a .git entry it is deleted last
// but one (before dir itself): an interrupted deletion leaves a directory
// that still says which worktree it was.
func DeleteTree(dir string, id DirIdentity) error {
	parent, base := filepath.Split(filepath.Clean(dir))
	pfd, err := unix.Open(parent, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uint64(st.Dev) != id.Dev || st.Ino != id.Ino {
		return fmt.Errorf("%w: %s is %d:%d (mode %o), want the directory %d:%d", ErrNotSameDir, dir, st.Dev, st.Ino, st.Mode, id.Dev, id.Ino)
	}
	fd, err := openDirAt(pfd, base)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != id.Dev || st.Ino != id.Ino {
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "fstat", Path: dir, Err: err}
		}
		return fmt.Errorf("%w: %s changed while it was opened", ErrNotSameDir, dir)
	}
	err = emptyAndRemove(pfd, fd, base, dir, true)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Fsync(pfd); err != nil {
		return &os.PathError{Op: "fsync", Path: parent, Err: err}
	}
	return nil
}

// openDirAt opens the directory name in dirfd without following a
// symbolic link, giving it search and read permission first if it lacks
// them.
func openDirAt(dirfd int, name string) (int, error) {
	flags := unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_RDONLY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if errors.Is(err, unix.EACCES) {
		// fchmodat cannot refuse to follow a link on Linux; O_NOFOLLOW on
		// the open that follows still refuses one.
		if cerr := unix.Fchmodat(dirfd, name, 0o700, 0); cerr == nil {
			fd, err = unix.Openat(dirfd, name, flags, 0)
		}
	}
	return fd, err
}

// removeAt unlinks name in dirfd (rmdir with dir); on a permission error
// it gives dirfd's directory write permission and tries once more.
func removeAt(dirfd int, name string, dir bool) error {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	err := unix.Unlinkat(dirfd, name, flags)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		if cerr := unix.Fchmod(dirfd, 0o700); cerr == nil {
			err = unix.Unlinkat(dirfd, name, flags)
		}
	}
	return err
}

// dirEntry is a DirEntry for a name known to be a directory.
type dirEntry string

func (d dirEntry) Name() string               { return string(d) }
func (d dirEntry) IsDir() bool                { return true }
func (d dirEntry) Type() fs.FileMode          { return fs.ModeDir }
func (d dirEntry) Info() (fs.FileInfo, error) { return nil, errors.ErrUnsupported }

// The deletion engine of DeleteTree: as cheap as `rm -rf` of the same
// tree. Each directory is listed once (its entry types from the listing,
// no stat of each file), its entries unlinked by descriptor, and then the
// directory itself removed; only when that finds it not empty (something
// was created meanwhile) is it listed again. The top level's entries are
// shared among a few workers, so that a tree of many folders is deleted on
// every core.

// maxDeleteWorkers bounds the workers that delete a tree's top level.
const maxDeleteWorkers = 4

// emptyAndRemove empties the directory open as fd (named name in the
// directory open as pfd, path in errors) and removes it, listing it again
// while new entries keep it from being removed.
func emptyAndRemove(pfd, fd int, name, path string, top bool) error {
	for pass := 0; ; pass++ {
		if err := emptyDir(fd, path, top); err != nil {
			return err
		}
		err := removeAt(pfd, name, true)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOTEMPTY) && pass < 100:
			continue // written to meanwhile: list it again
		case errors.Is(err, unix.ENOTEMPTY):
			return &os.PathError{Op: "empty", Path: path, Err: errors.New("entries keep appearing")}
		}
		return &os.PathError{Op: "rmdir", Path: path, Err: err}
	}
}

// listDir lists the directory open as fd, from its start.
func listDir(fd int, path string) ([]fs.DirEntry, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, &os.PathError{Op: "dup", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(dup), path)
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return f.ReadDir(-1)
}

// emptyDir deletes what the directory open as fd holds now (path names it
// in errors). At the top level (top) the .git entry goes last, so that an
// interrupted deletion leaves a directory that still says which worktree
// it was, and the other entries are shared among workers.
func emptyDir(fd int, path string, top bool) error {
	entries, err := listDir(fd, path)
	if err != nil {
		return err
	}
	if !top {
		for _, e := range entries {
			if err := removeEntry(fd, path, e); err != nil {
				return err
			}
		}
		return nil
	}
	var dotgit fs.DirEntry
	work := entries[:0:0]
	for _, e := range entries {
		if e.Name() == ".git" {
			dotgit = e
			continue
		}
		work = append(work, e)
	}
	if err := removeShared(fd, path, work); err != nil {
		return err
	}
	if dotgit != nil {
		return removeEntry(fd, path, dotgit)
	}
	return nil
}

// removeShared removes entries of the directory open as fd with up to
// maxDeleteWorkers workers; the first error stops them all.
func removeShared(fd int, path string, entries []fs.DirEntry) error {
	workers := min(runtime.GOMAXPROCS(0), maxDeleteWorkers, len(entries))
	var next, done atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		failed.Store(true)
	}
	half := int64(len(entries)+1) / 2
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := next.Add(1) - 1
				if i >= int64(len(entries)) {
					return
				}
				if err := removeEntry(fd, path, entries[i]); err != nil {
					fail(err)
					return
				}
				if done.Add(1) == half {
					if err := fpDeletePartial.Inject(); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func removeEntry(fd int, path string, e fs.DirEntry) error {
	name := e.Name()
	child := path + string(filepath.Separator) + name
	if e.IsDir() {
		cfd, err := openDirAt(fd, name)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			// Replaced by a file or a link since it was listed: unlink it.
			err = removeAt(fd, name, false)
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return &os.PathError{Op: "unlink", Path: child, Err: err}
			}
			return nil
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: child, Err: err}
		}
		if mountRoot(cfd) {
			// A file system mounted inside the tree (a bind mount of
			// someone's data, a volume) is not the tree's to delete.
			unix.Close(cfd)
			return &os.PathError{Op: "delete", Path: child,
				Err: fmt.Errorf("%w: a file system is mounted there; unmount it, then retry", ErrCrossDevice)}
		}
		err = emptyAndRemove(fd, cfd, name, child, false)
		unix.Close(cfd)
		return err
	}
	err := removeAt(fd, name, false)
	if errors.Is(err, unix.EISDIR) {
		// Replaced by a directory since it was listed.
		return removeEntry(fd, path, dirEntry(name))
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "unlink", Path: child, Err: err}
	}
	return nil
}
