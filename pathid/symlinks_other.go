//go:build !linux

package pathid

// maxSymlinks is the number of symlinks one path resolution may follow
// before failing with ELOOP. 32 is the limit of the BSDs and macOS
// (MAXSYMLINKS); staying at or below the kernel's limit keeps Physical from
// answering for a path the kernel would refuse to open.
const maxSymlinks = 32
