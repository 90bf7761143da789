package pathid

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinels for the refusals callers branch on. Every error pathid returns
// for them is an *Error whose Kind is one of these, so errors.Is matches the
// sentinel and errors.As recovers the paths involved.
var (
	// ErrInvalidPath: the path is empty, contains a NUL byte, or a base that
	// must be absolute is not.
	ErrInvalidPath = wire.Sentinel("unsafe_path", "pathid: invalid path")

	// ErrTraversal: a path that must stay inside a root contains a ".."
	// component as written by the caller.
	ErrTraversal = wire.Sentinel("unsafe_path", "pathid: path contains parent traversal (..)")

	// ErrNotConfined: a path, or a symlink met while resolving it, leads
	// outside its root.
	ErrNotConfined = wire.Sentinel("unsafe_path", "pathid: path escapes its root")

	// ErrDanglingSymlink: a symlink met while resolving a path points at
	// something that does not exist, so the path's physical form cannot be
	// known. pathid refuses rather than guess what the link will point at
	// once its target is created.
	ErrDanglingSymlink = wire.Sentinel("unsafe_path", "pathid: symlink does not resolve")

	// ErrSymlinkLoop: resolving the path followed more symlinks than the
	// kernel would (a cycle, or a very long chain). Such errors also match
	// syscall.ELOOP.
	ErrSymlinkLoop = wire.Sentinel("unsafe_path", "pathid: symlink cycle or overlong chain")

	// ErrUnresolvable: the path has a ".." component after a component that
	// does not exist yet. The kernel would refuse such a path, and what it
	// will mean once the missing directory is created cannot be known.
	ErrUnresolvable = wire.Sentinel("unsafe_path", "pathid: path cannot be resolved physically")

	// ErrNotRegular: a link count was asked of something that is not a
	// regular file (a directory's count reflects its subdirectories, not
	// aliases).
	ErrNotRegular = wire.Sentinel("unsafe_path", "pathid: not a regular file")

	// ErrNoIdentity: the file system did not report a device and inode
	// number for the file, so its identity cannot be verified.
	ErrNoIdentity = wire.Sentinel("unsafe_path", "pathid: file identity unavailable")
)

// An Error describes a refused or failed path operation: what pathid was
// doing, on which path, where exactly it stopped and why. Kind is one of the
// package's sentinels (or nil for a plain OS failure) and Err the underlying
// OS error (or nil); both are reachable with errors.Is and errors.As.
type Error struct {
	Op     string // what pathid was doing: "lexical", "resolve", "confine", "compare", "stat", "lstat", "link count", "case probe"
	Path   string // the path as the caller gave it
	Root   string // for confinement, the root the path must stay in
	At     string // the component or symlink where resolution stopped, when that is not Path itself
	Reason string // the specific reason, in words
	Kind   error  // a pathid sentinel, or nil
	Err    error  // the underlying OS error, or nil
}

// Error formats the refusal as "pathid: OP PATH [in root ROOT]: KIND: REASON: ERR;
// HINT", leaving out the parts that are empty. The hint says what the
// caller can do about it.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("pathid: ")
	b.WriteString(e.Op)
	if e.Path != "" {
		b.WriteString(" ")
		b.WriteString(e.Path)
	}
	if e.Root != "" {
		b.WriteString(" in root ")
		b.WriteString(e.Root)
	}
	sep := ": "
	if e.Kind != nil {
		b.WriteString(sep)
		b.WriteString(strings.TrimPrefix(e.Kind.Error(), "pathid: "))
	}
	if e.Reason != "" {
		b.WriteString(sep)
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(sep)
		b.WriteString(e.Err.Error())
	}
	if h := hint(e.Kind); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// Unwrap returns Kind and Err, so errors.Is(err, ErrDanglingSymlink) and
// errors.Is(err, fs.ErrNotExist) both work on the same error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// osError wraps an OS error about path. When the OS error names the same
// path, only its cause is kept, so the message does not say the path twice.
func osError(op, path string, err error) *Error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	}
	return &Error{Op: op, Path: path, Err: err}
}

// hint says what the caller can do about a refusal of the given kind.
func hint(kind error) string {
	switch kind {
	case ErrInvalidPath:
		return "pass a non-empty path without NUL bytes (and, where one is asked for, an absolute base)"
	case ErrTraversal:
		return "write the path relative to the root without '..' components"
	case ErrNotConfined:
		return "name a path inside the root; a symlink inside the root must point inside it too"
	case ErrDanglingSymlink:
		return "create the symlink's target or remove the symlink, then retry"
	case ErrSymlinkLoop:
		return "break the symlink cycle, then retry"
	case ErrUnresolvable:
		return "write the path without '..' after a directory that does not exist yet"
	case ErrNotRegular:
		return "link counts identify hard links only for regular files"
	case ErrNoIdentity:
		return "use a file system that reports device and inode numbers"
	}
	return ""
}
