package pathid

import (
	"syscall"
	"testing"
)

// fileSystemType names the file system holding dir, for the few file
// systems the tests have expectations about ("" for any other).
func fileSystemType(t *testing.T, dir string) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	const ext4Magic = 0xEF53 // EXT4_SUPER_MAGIC, shared by ext2 and ext3
	if st.Type == ext4Magic {
		return "ext4"
	}
	return ""
}
