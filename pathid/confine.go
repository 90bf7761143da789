package pathid

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Confine returns the physical form of p, which must be confined to the
// directory root. A relative p is taken relative to root (not to the
// working directory); an absolute p must lie lexically inside root, as
// written or as resolved. Confine refuses:
//
//   - any ".." component in p as written (ErrTraversal), even one that
//     would stay inside root: the caller must name the path directly;
//   - a symlink inside root that resolves outside it, or whose resolution
//     passes through a directory outside root other than root's own
//     ancestors (ErrNotConfined);
//   - a symlink that does not resolve (ErrDanglingSymlink);
//   - a root that does not exist or is not a directory.
//
// A symlink that resolves inside root is an alias: Confine follows it and
// returns the path it names. A path that does not exist yet is named
// through its closest existing ancestor, which must itself be confined.
// root may itself be reached through symlinks; only what lies beneath it
// is held to the rules above.
//
// Confine says nothing about hard links (see LinkCount) or case aliases
// (see CaseInsensitive). Like Physical, its answer holds at the moment of
// the call.
func Confine(root, p string) (string, error) {
	return confine(root, p, os.Lstat, os.Readlink)
}

func confine(root, p string, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (string, error) {
	const op = "confine"
	if err := validate(op, p); err != nil {
		return "", err
	}
	if hasDotDot(p) {
		return "", &Error{Op: op, Path: p, Root: root, Reason: "'..' is not allowed in a confined path", Kind: ErrTraversal}
	}
	rootAbs, err := absolute(op, "", root)
	if err != nil {
		return "", err
	}
	rw := newWalker("resolve", root)
	rw.lstat, rw.readlink = lstat, readlink
	rootRes, err := rw.walk("/", segment{rest: rootAbs})
	if err != nil {
		return "", err
	}
	rootPhys := rootRes.path
	if !rootRes.exists() {
		return "", &Error{Op: op, Path: p, Root: root, Reason: "the root " + rootRes.path + " does not exist", Err: syscall.ENOENT}
	}
	// rootPhys holds no symlink (the walk resolved them all), so lstat
	// sees what stat would.
	fi, err := lstat(rootPhys)
	if err != nil {
		return "", &Error{Op: op, Path: p, Root: root, Err: err}
	}
	if !fi.IsDir() {
		return "", &Error{Op: op, Path: p, Root: root, Reason: "the root is not a directory",
			Err: &fs.PathError{Op: "stat", Path: rootPhys, Err: syscall.ENOTDIR}}
	}

	rel := p
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		ok := false
		// The root as written names the same directory as its physical
		// form only if cleaning it did not remove a ".." (which, after a
		// symlink, means something else to the kernel).
		if !hasDotDot(rootAbs) {
			rel, ok = below(filepath.Clean(rootAbs), clean)
		}
		if !ok {
			rel, ok = below(rootPhys, clean)
		}
		if !ok {
			return "", &Error{Op: op, Path: p, Root: root, Reason: "the absolute path lies outside the root", Kind: ErrNotConfined}
		}
	}

	w := newWalker(op, p)
	w.lstat, w.readlink = lstat, readlink
	w.root, w.fence = root, rootPhys
	res, err := w.walk(rootPhys, segment{rest: rel})
	if err != nil {
		return "", err
	}
	// Without ".." in p and with every symlink held to the fence, the walk
	// cannot end outside; check anyway, since a confinement answer is
	// exactly what must not be wrong.
	if !Contains(rootPhys, res.path) {
		return "", &Error{Op: op, Path: p, Root: root, Reason: "it resolves to " + res.path + ", outside " + rootPhys, Kind: ErrNotConfined}
	}
	return res.path, nil
}

// HasDotDot reports whether p, as written, has a ".." component.
func HasDotDot(p string) bool { return hasDotDot(p) }

func hasDotDot(p string) bool {
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// Below returns p relative to root ("." for root itself) when p equals
// root or lies beneath it; both must be clean and absolute. It compares
// names only.
func Below(root, p string) (string, bool) { return below(root, p) }

func below(root, p string) (string, bool) {
	switch {
	case p == root:
		return ".", true
	case root == "/":
		return p[1:], true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root)+1:], true
	}
	return "", false
}
