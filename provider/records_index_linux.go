package provider

import (
	"io/fs"
	"syscall"
)

// keyOf returns the identity and times of a file as the claims index
// records them.
func keyOf(fi fs.FileInfo) (statKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	return statKey{Dev: uint64(st.Dev), Ino: st.Ino, Size: uint64(st.Size),
		Ctime: st.Ctim.Nano(), Mtime: st.Mtim.Nano()}, true
}
