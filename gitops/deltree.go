package gitops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

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
