package provider

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/majlis-dev/majlis/internal/workers"
	"golang.org/x/sys/unix"
)

// treeStamp hashes every entry under dir: its name, mode, device, inode,
// size, modification and change times, folder by folder (folders
// included, so that an entry added or removed anywhere changes the hash).
// Each entry is looked at by fstatat(2) in its folder, the top level's
// folders on two workers: a 20,000-file worktree in tens of
// milliseconds. A file with another name (a hard link: git never makes
// one in a checkout) gives an *errHardLinked: that file is shared with a
// path outside majlis's view, and edits in the worktree would change it;
// but inside the kept paths (pool.keep_ignored: caches such as pnpm's
// node_modules, made of hard links to its store) it is listed in linked
// instead, for the caller to check that git ignores it. Inside a kept
// path an environment file (.env*) gives an *errKeptPath, and so does a
// kept path, or a folder above one, that is a symbolic link (the cache
// would be outside the worktree).
func treeStamp(dir string, kept []string) (sum string, n int, linked []string, err error) {
	w := &stampWalk{kept: kept}
	b, err := w.dirStamp(dir, "", true)
	if err != nil {
		return "", 0, nil, err
	}
	slices.Sort(w.linked)
	return hex.EncodeToString(b), int(w.n.Load()), w.linked, nil
}

// A stampWalk is one treeStamp.
type stampWalk struct {
	kept   []string
	n      atomic.Int64
	mu     sync.Mutex
	linked []string
}

// dirStamp hashes the folder dir (rel from the worktree's root) and
// everything under it.
func (w *stampWalk) dirStamp(dir, rel string, top bool) ([]byte, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	fd := int(f.Fd())
	type entry struct {
		st  unix.Stat_t
		sub []byte
	}
	ents := make([]entry, len(names))
	var subdirs []int
	for i, name := range names {
		if err := unix.Fstatat(fd, name, &ents[i].st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, &os.PathError{Op: "fstatat", Path: filepath.Join(dir, name), Err: err}
		}
		if err := w.entry(dir, path.Join(rel, name), &ents[i].st); err != nil {
			return nil, err
		}
		if ents[i].st.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs = append(subdirs, i)
		}
	}
	w.n.Add(int64(len(names)))
	errs := make([]error, len(subdirs))
	one := func(k int) {
		i := subdirs[k]
		ents[i].sub, errs[k] = w.dirStamp(filepath.Join(dir, names[i]), path.Join(rel, names[i]), false)
	}
	if top {
		workers.Each(len(subdirs), 1, one)
	} else {
		for k := range subdirs {
			one(k)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	buf := make([]byte, 0, len(names)*96)
	for i, name := range names {
		st := &ents[i].st
		buf = append(buf, name...)
		buf = append(buf, 0)
		for _, v := range []uint64{uint64(st.Mode), st.Dev, st.Ino, uint64(st.Size),
			uint64(st.Mtim.Sec), uint64(st.Mtim.Nsec), uint64(st.Ctim.Sec), uint64(st.Ctim.Nsec)} {
			buf = binary.LittleEndian.AppendUint64(buf, v)
		}
		buf = append(buf, ents[i].sub...)
	}
	sum := sha256.Sum256(buf)
	return sum[:], nil
}

// entry checks one entry (rel from the worktree's root) of a stamp walk.
func (w *stampWalk) entry(dir, rel string, st *unix.Stat_t) error {
	if len(w.kept) == 0 {
		if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Nlink > 1 {
			return &errHardLinked{path: filepath.Join(dir, path.Base(rel))}
		}
		return nil
	}
	kept := inKeptPath(rel, w.kept)
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK && aboveKeptPath(rel, w.kept):
		return &errKeptPath{path: filepath.Join(dir, path.Base(rel)), why: "is a symbolic link: the kept cache would be outside the worktree"}
	case kept && st.Mode&unix.S_IFMT == unix.S_IFLNK && linksOut(filepath.Join(dir, path.Base(rel)), rel):
		return &errKeptPath{path: filepath.Join(dir, path.Base(rel)), why: "is a symbolic link out of the worktree (or into git's folder) inside a kept path: writes through it would change files there"}
	case kept && isEnvName(path.Base(rel)):
		return &errKeptPath{path: filepath.Join(dir, path.Base(rel)), why: "is an environment file (.env) inside a kept path"}
	case st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Nlink <= 1:
		return nil
	case !kept:
		return &errHardLinked{path: filepath.Join(dir, path.Base(rel))}
	}
	w.mu.Lock()
	w.linked = append(w.linked, rel)
	w.mu.Unlock()
	return nil
}
