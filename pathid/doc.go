// Package pathid answers questions about path identity: the lexical form of
// a path (absolute, cleaned), its physical form (symlinks resolved; for a
// path that does not exist yet, the closest existing ancestor resolved and
// the rest appended), a file's identity (device and inode), and whether two
// paths overlap (equal, or one contains the other, lexically or physically).
//
// pathid knows nothing of workspaces or Git.
//
// # Contract
//
//   - Lexical and LexicalFrom only clean and make absolute; they never touch
//     the file system (beyond asking for the working directory).
//   - Physical and PhysicalFrom resolve symlinks as the kernel does. They
//     fail closed instead of guessing: a symlink that does not resolve, a
//     ".." after a component that does not exist yet, and a symlink cycle
//     are refused with a sentinel error, and every failure other than
//     "does not exist" (permission, ENOTDIR, ELOOP) is returned, never
//     mistaken for absence. PhysicalAhead alone follows a symlink whose
//     target does not exist yet, to say where a name will lead once that
//     target is made (where another path may come to lie, never where to
//     create one).
//   - Containment is component-wise: "/a/b" contains "/a/b/c", never
//     "/a/bc". Relate and Contains compare lexically; Compare and Overlaps
//     compare the lexical forms, then the physical forms, then the device
//     and inode of the existing directories at and above each path (which
//     catches bind mounts). Any one of them showing an overlap is an
//     overlap. An answer that cannot be established is Unknown, the zero
//     Relation, which counts as overlapping; Overlaps returns true with
//     its error. Resolve records one path's forms so that it can be
//     compared with many others without resolving it each time.
//   - Confine returns the physical form of a path only if it stays inside
//     its root: no ".." as written, no symlink that resolves outside the
//     root or does not resolve.
//   - The zero FileID equals nothing, not even itself.
//   - CaseInsensitive probes a directory with a real file; it never infers
//     case folding from the operating system.
//
// Every answer describes the file system at the moment of the call. A
// caller about to act on a path (delete, reset, grant) must ask again
// immediately before acting, and compare recorded FileIDs.
//
// Errors are *Error values carrying the operation, the paths and the
// reason; the states callers branch on are sentinels (ErrNotConfined,
// ErrDanglingSymlink, ...) matched with errors.Is, and underlying OS errors
// (fs.ErrNotExist, syscall.ELOOP, ...) match too.
//
// pathid is written for Unix path semantics; device and inode numbers are
// read from the Unix stat buffer, and without one every identity check
// fails with ErrNoIdentity. All functions are safe for concurrent use.
package pathid
