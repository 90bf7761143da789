package pathid

import (
	"os"
	"path/filepath"
)

// A Form names the form of two paths in which an overlap was established.
type Form int

// The forms Compare tries, in order.
const (
	FormNone     Form = iota // no form established an overlap
	FormLexical              // the cleaned, absolute paths as written
	FormPhysical             // the paths with symlinks resolved
	FormIdentity             // directories with the same device and inode (a bind mount, or a case variant on a case-insensitive file system)
)

// String returns a stable name for f, suitable for JSON output.
func (f Form) String() string {
	switch f {
	case FormLexical:
		return "lexical"
	case FormPhysical:
		return "physical"
	case FormIdentity:
		return "identity"
	}
	return "none"
}

// An Overlap is the answer of Compare: how two paths a and b relate, and
// which form of them showed it, so that a refusal can explain itself.
type Overlap struct {
	Relation Relation
	Form     Form

	// A and B are the forms of a and b that were compared last: the
	// lexical forms when Form is FormLexical, the physical forms otherwise
	// (as far as they were computed when Compare failed).
	A, B string

	// For FormIdentity: the existing directory (or file) at or above A and
	// the one at or above B that are the same file under two names.
	AliasA, AliasB string
}

// String explains o in words, for error messages.
func (o Overlap) String() string {
	var s string
	switch o.Relation {
	case Disjoint:
		return o.A + " and " + o.B + " do not overlap"
	case Equal:
		s = o.A + " and " + o.B + " are the same path"
	case AContainsB:
		s = o.A + " contains " + o.B
	case BContainsA:
		s = o.A + " lies inside " + o.B
	default:
		return "whether " + o.A + " and " + o.B + " overlap is unknown"
	}
	switch o.Form {
	case FormPhysical:
		s += " (with symlinks resolved)"
	case FormIdentity:
		s += " (" + o.AliasA + " and " + o.AliasB + " are one file, by device and inode)"
	}
	return s
}

// Overlaps reports whether the paths a and b overlap: whether one equals or
// contains the other, lexically or physically (see Compare). Containment is
// component-wise: "/a/b" contains "/a/b/c" but not "/a/bc".
//
// When the answer cannot be established, Overlaps returns true along with
// the error, so that a caller that ignores the error still fails closed.
func Overlaps(a, b string) (bool, error) {
	o, err := Compare(a, b)
	if err != nil {
		return true, err
	}
	return o.Relation.Overlapping(), nil
}

// Compare establishes how the paths a and b relate. Relative paths are
// taken relative to the working directory. It compares, stopping at the
// first form that shows an overlap:
//
//  1. the lexical forms (see Lexical);
//  2. the physical forms (see Physical; a path that does not exist yet is
//     placed through its closest existing ancestor);
//  3. the identities (device and inode) of the existing directories at and
//     above each physical form, which catches aliases no path string
//     shows, such as bind mounts: when a directory above a is the same as a
//     directory above b, b is re-expressed below a's and compared again.
//
// If a physical form cannot be established (a dangling symlink, a
// permission error...) and the lexical forms did not already overlap,
// Compare returns an Overlap with Relation Unknown and the error.
//
// To compare one path with many, Resolve it once and use
// Resolved.Compare.
func Compare(a, b string) (Overlap, error) {
	wd := ""
	if !filepath.IsAbs(a) || !filepath.IsAbs(b) {
		// One working directory for both, in case it changes in between.
		var err error
		if wd, err = os.Getwd(); err != nil {
			return Overlap{A: a, B: b}, &Error{Op: "compare", Path: a, Reason: "making relative paths absolute", Err: err}
		}
	}
	absA, err := absolute("compare", wd, a)
	if err != nil {
		return Overlap{A: a, B: b}, err
	}
	absB, err := absolute("compare", wd, b)
	if err != nil {
		return Overlap{A: a, B: b}, err
	}
	// The lexical forms need no system call; try them before resolving.
	o := Overlap{Form: FormLexical, A: filepath.Clean(absA), B: filepath.Clean(absB)}
	if o.Relation = Relate(o.A, o.B); o.Relation != Disjoint {
		return o, nil
	}
	ra, err := resolveForms(a, absA)
	if err != nil {
		return Overlap{A: o.A, B: o.B}, err
	}
	rb, err := resolveForms(b, absB)
	if err != nil {
		return Overlap{A: ra.Physical, B: o.B}, err
	}
	return ra.Compare(rb), nil
}

// A Resolved holds the forms of one path as of the moment Resolve ran: its
// lexical and physical forms, and the identities of the existing
// directories along the physical form. It lets one path be compared with
// many without resolving it again each time. It goes stale as the file
// system changes: resolve again before acting on an answer.
type Resolved struct {
	Lexical  string // the lexical form (see Lexical)
	Physical string // the physical form (see Physical)
	Existing string // the closest existing ancestor of Physical, or Physical itself when it exists

	ids []dirID // identities of Existing and its ancestors, nearest first
}

// Resolve computes the forms of p; a relative p is taken relative to the
// working directory. It fails as Physical does.
func Resolve(p string) (Resolved, error) {
	abs, err := absolute("resolve", "", p)
	if err != nil {
		return Resolved{}, err
	}
	return resolveForms(p, abs)
}

func resolveForms(input, abs string) (Resolved, error) {
	return resolveFormsWith(newWalker("resolve", input), abs)
}

func resolveFormsWith(w *walker, abs string) (Resolved, error) {
	w.track = true
	r, err := w.walk("/", segment{rest: abs})
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Lexical: filepath.Clean(abs), Physical: r.path, Existing: r.existing, ids: r.ids}, nil
}

// Exists reports whether the whole path existed when it was resolved.
func (a Resolved) Exists() bool { return a.Physical != "" && a.Physical == a.Existing }

// Compare relates a to b as the function Compare does, from the forms
// recorded when they were resolved; it makes no system call. A Resolved
// that did not come from Resolve relates to anything as Unknown.
func (a Resolved) Compare(b Resolved) Overlap {
	if a.Lexical == "" || a.Physical == "" || len(a.ids) == 0 || b.Lexical == "" || b.Physical == "" || len(b.ids) == 0 {
		return Overlap{A: a.Lexical, B: b.Lexical}
	}
	o := Overlap{Form: FormLexical, A: a.Lexical, B: b.Lexical}
	if o.Relation = Relate(o.A, o.B); o.Relation != Disjoint {
		return o
	}
	o = Overlap{Form: FormPhysical, A: a.Physical, B: b.Physical}
	if o.Relation = Relate(o.A, o.B); o.Relation != Disjoint {
		return o
	}
	for _, da := range a.ids {
		for _, db := range b.ids {
			if da.path == db.path || !da.id.Equal(db.id) {
				continue // the same name adds nothing to the physical comparison
			}
			// da.path and db.path are one directory: see where b lies
			// when reached through a's name for it.
			rest, _ := below(db.path, b.Physical)
			if r := Relate(a.Physical, filepath.Join(da.path, rest)); r != Disjoint {
				return Overlap{Relation: r, Form: FormIdentity, A: a.Physical, B: b.Physical, AliasA: da.path, AliasB: db.path}
			}
		}
	}
	return Overlap{Relation: Disjoint, A: a.Physical, B: b.Physical}
}
