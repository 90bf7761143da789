//go:build linux

package salvage

import "golang.org/x/sys/unix"

// execBitsKept reports whether the file system holding dir keeps an
// executable bit per file. FAT, exFAT and NTFS do not: every file shows
// the same bits (the mount's), which is why repositories on them set
// core.fileMode=false, and reading those bits as chmods would only make
// noise. Any other file system, or one statfs cannot tell, is taken to
// keep them.
func execBitsKept(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return true
	}
	switch int64(st.Type) {
	case unix.MSDOS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC,
		0x5346544e, // NTFS (the old driver)
		0x7366746e: // NTFS (ntfs3)
		return false
	}
	return true
}
