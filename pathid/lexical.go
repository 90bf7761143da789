package pathid

import (
	"os"
	"path/filepath"
	"strings"
)

// Lexical returns the lexical form of p: absolute and cleaned ("a/../b"
// becomes "b", trailing slashes and repeated slashes go). A relative p is
// taken relative to the current working directory. Lexical does not touch
// the file system beyond asking for the working directory, so it does not
// resolve symlinks: for that, see Physical.
func Lexical(p string) (string, error) {
	abs, err := absolute("lexical", "", p)
	if err != nil {
		return "", err
	}
	return filepath.Clean(abs), nil
}

// LexicalFrom is Lexical with relative paths taken relative to base, which
// must be absolute, instead of the working directory.
func LexicalFrom(base, p string) (string, error) {
	abs, err := absolute("lexical", base, p)
	if err != nil {
		return "", err
	}
	return filepath.Clean(abs), nil
}

// absolute makes p absolute against base (the working directory when base
// is empty) WITHOUT cleaning it: a ".." after a symlink means the symlink
// target's parent to the kernel, so the physical walk must see the path as
// written.
func absolute(op, base, p string) (string, error) {
	if err := validate(op, p); err != nil {
		return "", err
	}
	if filepath.IsAbs(p) {
		return p, nil
	}
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", &Error{Op: op, Path: p, Reason: "making a relative path absolute", Err: err}
		}
		base = wd
	} else if err := validate(op, base); err != nil {
		return "", err
	} else if !filepath.IsAbs(base) {
		return "", &Error{Op: op, Path: p, Reason: "base " + base + " is not absolute", Kind: ErrInvalidPath}
	}
	return base + "/" + p, nil
}

func validate(op, p string) error {
	switch {
	case p == "":
		return &Error{Op: op, Reason: "empty path", Kind: ErrInvalidPath}
	case strings.IndexByte(p, 0) >= 0:
		return &Error{Op: op, Path: p, Reason: "path contains a NUL byte", Kind: ErrInvalidPath}
	}
	return nil
}

// A Relation says how two paths are placed with respect to each other. The
// zero value is Unknown, which callers must treat as overlapping: a
// forgotten or failed comparison never reads as Disjoint.
type Relation int

// The relations between two paths a and b.
const (
	Unknown    Relation = iota // the relation could not be established; treat as overlapping
	Disjoint                   // neither path equals or contains the other
	Equal                      // a and b name the same place
	AContainsB                 // b lies strictly beneath a
	BContainsA                 // a lies strictly beneath b
)

// Overlapping reports whether r means the two paths overlap, or may: every
// relation but Disjoint.
func (r Relation) Overlapping() bool { return r != Disjoint }

// String returns a stable name for r, suitable for JSON output.
func (r Relation) String() string {
	switch r {
	case Disjoint:
		return "disjoint"
	case Equal:
		return "equal"
	case AContainsB:
		return "a_contains_b"
	case BContainsA:
		return "b_contains_a"
	}
	return "unknown"
}

// Relate compares two paths lexically, component by component: "/a/b"
// contains "/a/b/c" but not "/a/bc". Both are cleaned first and nothing on
// disk is consulted, so symlinks are not resolved (Compare does that).
//
// Two absolute paths, or two relative paths, always relate definitely,
// except when leading ".." components make the answer depend on names that
// are not written down ("../a" against "../../b"): then, as for an absolute
// path against a relative one, Relate returns Unknown.
func Relate(a, b string) Relation {
	a, b = filepath.Clean(a), filepath.Clean(b)
	absA, absB := filepath.IsAbs(a), filepath.IsAbs(b)
	if absA != absB {
		return Unknown
	}
	if absA {
		return relateClean(a, b)
	}
	upA, restA := splitUp(a)
	upB, restB := splitUp(b)
	switch {
	case upA == upB:
		return relateClean(restA, restB)
	// A path made only of ".." is an ancestor of the working directory,
	// so it contains everything reached from a lower ancestor.
	case upA > upB && restA == ".":
		return AContainsB
	case upB > upA && restB == ".":
		return BContainsA
	}
	return Unknown
}

// Contains reports whether child equals parent or lies beneath it,
// lexically (see Relate).
func Contains(parent, child string) bool {
	r := Relate(parent, child)
	return r == Equal || r == AContainsB
}

// relateClean relates two cleaned paths that are both absolute, or both
// relative without leading "..".
func relateClean(a, b string) Relation {
	switch {
	case a == b:
		return Equal
	case beneath(a, b):
		return AContainsB
	case beneath(b, a):
		return BContainsA
	}
	return Disjoint
}

// beneath reports whether the cleaned path child lies strictly beneath the
// cleaned path parent. Appending the separator before comparing prefixes is
// what keeps "/a/bc" out of "/a/b".
func beneath(parent, child string) bool {
	switch parent {
	case "/":
		return child != "/" && strings.HasPrefix(child, "/")
	case ".":
		return child != "." && !filepath.IsAbs(child)
	}
	return strings.HasPrefix(child, parent+"/")
}

// splitUp splits a cleaned relative path into its number of leading ".."
// components and the rest ("." when nothing is left). Clean leaves ".." only
// at the start of a relative path.
func splitUp(p string) (int, string) {
	n := 0
	for {
		switch {
		case p == "..":
			return n + 1, "."
		case strings.HasPrefix(p, "../"):
			n++
			p = p[len("../"):]
		default:
			return n, p
		}
	}
}
