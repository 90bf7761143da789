package provider

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// A keyReader reads the keys (records_index.go) of the folders and records
// under the claims folder, by names relative to it. A reader checks a few
// thousand of them against the index with a thousand workspaces, and an
// open descriptor of the folder saves resolving its whole path for each
// (about a third of each lookup's time).
type keyReader struct {
	root string
	fd   int // -1: by whole paths
}

func openKeyReader(root string) *keyReader {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	return &keyReader{root: root, fd: fd}
}

// key is the key of rel, a path under the folder, not following a
// symbolic link at its end.
func (k *keyReader) key(rel string) (statKey, error) {
	if k.fd < 0 {
		return lstatKey(filepath.Join(k.root, rel))
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(k.fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statKey{}, err
		}
		break
	}
	return statKey{Dev: st.Dev, Ino: st.Ino, Size: uint64(st.Size),
		Ctime: st.Ctim.Nano(), Mtime: st.Mtim.Nano()}, nil
}

func (k *keyReader) close() {
	if k.fd >= 0 {
		unix.Close(k.fd)
	}
}
