package salvage

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/wire"
)

// SpecialFile is wire.SpecialFile: the result type is defined once, in the wire contract.
type SpecialFile = wire.SpecialFile

// SpecialFiles walks the directory tree of the worktree whose top level is
// worktree and returns how many special files it holds and the first
// limit of them (all when limit < 0), depth first and each folder in the
// order of its names. It looks everywhere a deletion of the directory
// would reach, ignored and untracked folders and nested repositories
// included, except the worktree's own .git entry; it follows no symbolic link and does not
// enter another file system mounted inside (a deletion stops there too).
// It changes nothing. A directory it cannot read is an error: what it
// holds cannot be told.
func SpecialFiles(worktree string, limit int) (int, []SpecialFile, error) {
	dir, _, err := gitops.TopLevel(worktree)
	if err != nil {
		return 0, nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return 0, nil, err
	}
	dev := deviceOf(fi)
	w := specialWalk{limit: limit, dev: dev}
	if err := w.walk(dir, "", true); err != nil {
		return 0, nil, err
	}
	if w.found == nil {
		w.found = []SpecialFile{}
	}
	return w.n, w.found, nil
}

type specialWalk struct {
	limit, n int
	found    []SpecialFile
	dev      uint64
}

// walk lists the directory abs (rel from the top level; top for the top
// level itself) and the folders in it.
func (w *specialWalk) walk(abs, rel string, top bool) error {
	entries, err := os.ReadDir(abs)
	if err != nil {
		return fmt.Errorf("salvage: listing the special files of %s: %w", abs, err)
	}
	for _, e := range entries {
		name := e.Name()
		if top && name == ".git" {
			continue
		}
		p := path.Join(rel, name)
		t := e.Type()
		switch {
		case t.IsDir():
			fi, err := e.Info()
			if err != nil {
				if os.IsNotExist(err) {
					continue // deleted meanwhile
				}
				return err
			}
			if deviceOf(fi) != w.dev {
				continue // a mount point: a deletion stops there
			}
			if err := w.walk(filepath.Join(abs, name), p, false); err != nil {
				return err
			}
		case t.IsRegular(), t&fs.ModeSymlink != 0:
		default:
			w.n++
			if w.limit < 0 || len(w.found) < w.limit {
				w.found = append(w.found, SpecialFile{Path: p, Type: specialType(t)})
			}
		}
	}
	return nil
}

func specialType(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "fifo"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "char_device"
	case t&fs.ModeDevice != 0:
		return "block_device"
	}
	return "irregular"
}

func deviceOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}
