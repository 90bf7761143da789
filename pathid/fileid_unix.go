//go:build unix

package pathid

import (
	"io/fs"
	"syscall"
)

// sysFileID reads device and inode from the stat buffer behind fi. The
// conversions are needed because the field types differ between Unix
// systems (Dev is int32 on macOS).
func sysFileID(fi fs.FileInfo) (FileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return FileID{}, false
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, true
}

// sysNlink reads the link count from the stat buffer behind fi.
func sysNlink(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st == nil {
		return 0, false
	}
	return uint64(st.Nlink), true
}
