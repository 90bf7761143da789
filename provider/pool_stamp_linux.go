package provider

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
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
// path outside majlis's view, and edits in the worktree would change it.
func treeStamp(dir string) (string, int, error) {
	var n atomic.Int64
	sum, err := dirStamp(dir, &n, true)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(sum), int(n.Load()), nil
}

// dirStamp hashes the folder dir and everything under it.
func dirStamp(dir string, n *atomic.Int64, top bool) ([]byte, error) {
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
		if ents[i].st.Mode&unix.S_IFMT == unix.S_IFDIR {
			subdirs = append(subdirs, i)
		} else if ents[i].st.Nlink > 1 {
			return nil, &errHardLinked{path: filepath.Join(dir, name)}
		}
	}
	n.Add(int64(len(names)))
	errs := make([]error, len(subdirs))
	one := func(k int) {
		i := subdirs[k]
		ents[i].sub, errs[k] = dirStamp(filepath.Join(dir, names[i]), n, false)
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
