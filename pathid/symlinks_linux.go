package pathid

// maxSymlinks is the number of symlinks one path resolution may follow
// before failing with ELOOP: Linux's MAXSYMLINKS. Matching the kernel keeps
// Physical from answering for a path the kernel would refuse to open.
const maxSymlinks = 40
