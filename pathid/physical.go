package pathid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Physical returns the physical form of p: absolute, with every symlink
// resolved the way the kernel resolves it (so "link/.." is the parent of
// the link's target, not the directory holding the link). A relative p is
// taken relative to the current working directory.
//
// For a path that does not exist yet, Physical resolves its closest
// existing ancestor and appends the remaining components, so the answer is
// where the path will be once it is created. It refuses, rather than
// guesses, when that cannot be known: a symlink that does not resolve
// (ErrDanglingSymlink), a ".." after a missing component (ErrUnresolvable),
// a symlink cycle (ErrSymlinkLoop). Failures other than "does not exist",
// such as a permission error or a file used as a directory, are returned
// too, never taken to mean absence.
//
// The answer describes the file system at the moment of the call; a caller
// about to act on it must check again just before acting.
func Physical(p string) (string, error) {
	abs, err := absolute("resolve", "", p)
	if err != nil {
		return "", err
	}
	r, err := resolve(p, abs, false)
	return r.path, err
}

// PhysicalAhead is Physical, except that a symlink whose target does
// not exist yet is followed to where its target will be rather than
// refused: it says which folder p will name once that target is made.
// It answers where another path may come to lie (a name registered
// through a link to a folder not made yet), never where to create
// something, which needs Physical. Other failures are Physical's.
func PhysicalAhead(p string) (string, error) {
	abs, err := absolute("resolve", "", p)
	if err != nil {
		return "", err
	}
	w := newWalker("resolve", p)
	w.ahead = true
	r, err := w.walk("/", segment{rest: abs})
	return r.path, err
}

// PhysicalFrom is Physical with relative paths taken relative to base,
// which must be absolute, instead of the working directory.
func PhysicalFrom(base, p string) (string, error) {
	abs, err := absolute("resolve", base, p)
	if err != nil {
		return "", err
	}
	r, err := resolve(p, abs, false)
	return r.path, err
}

// A resolution is the outcome of a physical walk.
type resolution struct {
	path     string // the physical form
	existing string // the longest existing prefix of path; equal to path when all of it exists

	// ids, when the walk tracked them, holds the identity of existing and
	// of each of its ancestors up to "/", nearest first.
	ids []dirID
}

func (r resolution) exists() bool { return r.path == r.existing }

// A dirID is the identity of one existing physical path.
type dirID struct {
	path string
	id   FileID
}

// resolve walks the absolute path abs; input is the path as the caller
// wrote it, for error messages. With track set it also records the
// identities along the result, at no extra system call: the walk has
// lstat'ed every component of it already.
func resolve(input, abs string, track bool) (resolution, error) {
	w := newWalker("resolve", input)
	w.track = track
	return w.walk("/", segment{rest: abs})
}

// A segment is a run of components still to be walked: the caller's path,
// or the target of a symlink met on the way.
type segment struct {
	rest string // components separated by '/'; empty ones are skipped
	link string // the symlink whose target this is; "" for the caller's path
}

// A walker resolves paths component by component, like the kernel does,
// but goes on past the first missing component instead of failing. Its file
// system calls are fields so tests can inject failures the test user cannot
// provoke (a permission error, when tests run as root).
type walker struct {
	op, input string // for errors: the operation and the caller's path
	root      string // for errors: the confinement root, if any

	// fence, when set, is the physical root the walk must stay in (see
	// Confine): every directory the walk passes through must lie inside
	// fence or be one of its ancestors, and every symlink located inside
	// fence must resolve inside fence.
	fence string

	// track asks for the identities along the result (see resolution.ids);
	// the walk must then start at "/".
	track bool

	// ahead follows a symlink whose target is missing to where the
	// target will be (PhysicalAhead), instead of failing.
	ahead bool

	lstat    func(string) (fs.FileInfo, error)
	readlink func(string) (string, error)
	links    int // symlinks followed so far, shared by every segment
}

func newWalker(op, input string) *walker {
	return &walker{op: op, input: input, lstat: os.Lstat, readlink: os.Readlink}
}

func (w *walker) fail(at, reason string, kind, err error) error {
	return &Error{Op: w.op, Path: w.input, Root: w.root, At: at, Reason: reason, Kind: kind, Err: err}
}

// identify returns the identity of the file fi, read from the walk's own
// lstat of path.
func (w *walker) identify(path string, fi fs.FileInfo) (dirID, error) {
	id, ok := sysFileID(fi)
	if !ok || id.IsZero() {
		return dirID{}, w.fail(path, "", ErrNoIdentity, nil)
	}
	return dirID{path, id}, nil
}

// walk resolves seg starting in dir, a physical directory ("/" for an
// absolute path).
func (w *walker) walk(dir string, seg segment) (resolution, error) {
	st := &walkState{dest: dir, isDir: true, stack: []segment{seg}}
	if w.track {
		fi, err := w.lstat("/")
		if err != nil {
			return resolution{}, w.fail("", "", nil, err)
		}
		d, err := w.identify("/", fi)
		if err != nil {
			return resolution{}, err
		}
		st.ids = []dirID{d}
	}
	for len(st.stack) > 0 {
		top := &st.stack[len(st.stack)-1]
		if top.rest == "" {
			// A symlink's target is fully walked: that is where the
			// symlink resolves to.
			if err := w.checkLink(top.link, st.dest); err != nil {
				return resolution{}, err
			}
			st.stack = st.stack[:len(st.stack)-1]
			continue
		}
		var c string
		c, top.rest, _ = strings.Cut(top.rest, "/")
		if c == "" {
			continue // a repeated or trailing slash
		}
		if err := w.component(st, c); err != nil {
			return resolution{}, err
		}
	}
	if st.existing == "" {
		st.existing = st.dest
	}
	slices.Reverse(st.ids)
	return resolution{path: st.dest, existing: st.existing, ids: st.ids}, nil
}

// A walkState is where a walk stands.
type walkState struct {
	dest     string // the physical path resolved so far
	isDir    bool   // whether dest is a directory
	existing string // once a component is missing: the last existing prefix
	// With w.track: the identities of "/" and of each component of dest
	// (while it exists), root first, kept in step with dest.
	ids []dirID
	// The segments still to walk: the caller's path, then the target of
	// each symlink met, innermost last.
	stack []segment
}

// component walks one component c of the innermost segment.
func (w *walker) component(st *walkState, c string) error {
	if st.existing != "" {
		// Past the closest existing ancestor nothing can be resolved, so
		// only plain names may follow. No symlink is expanded here, so
		// these components are all the caller's own.
		switch c {
		case ".":
		case "..":
			return w.fail(st.existing, "'..' follows "+st.dest+", which does not exist", ErrUnresolvable, nil)
		default:
			st.dest = join(st.dest, c)
		}
		return nil
	}
	if !st.isDir {
		return w.fail("", "", nil, &fs.PathError{Op: "lstat", Path: join(st.dest, c), Err: syscall.ENOTDIR})
	}
	switch c {
	case ".":
		return nil
	case "..":
		// dest holds no symlinks, so its lexical parent is its physical
		// parent.
		st.dest = filepath.Dir(st.dest)
		if len(st.ids) > 1 {
			st.ids = st.ids[:len(st.ids)-1]
		}
		return w.checkFence(st.dest, st.stack)
	}
	next := join(st.dest, c)
	fi, err := w.lstat(next)
	if err != nil {
		// Only ENOENT means absence; ENOTDIR, EACCES, ELOOP and the rest
		// are real failures.
		if !errors.Is(err, fs.ErrNotExist) {
			return w.fail("", "", nil, err)
		}
		if link := st.stack[len(st.stack)-1].link; link != "" && !w.ahead {
			return w.fail(link, "symlink "+link+" needs "+next+", which does not exist", ErrDanglingSymlink, nil)
		}
		st.existing = st.dest
		st.dest = next
		return nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return w.follow(st, next)
	}
	st.dest = next
	st.isDir = fi.IsDir()
	if w.track {
		d, err := w.identify(next, fi)
		if err != nil {
			return err
		}
		st.ids = append(st.ids, d)
	}
	return w.checkFence(st.dest, st.stack)
}

// follow reads the symlink next and pushes its target, walked from the
// directory holding the link (dest as it stands), or from "/".
func (w *walker) follow(st *walkState, next string) error {
	w.links++
	if w.links > maxSymlinks {
		return w.fail(next, fmt.Sprintf("reached %s after following %d symlinks", next, maxSymlinks), ErrSymlinkLoop, syscall.ELOOP)
	}
	target, err := w.readlink(next)
	if err != nil {
		return w.fail("", "", nil, err)
	}
	if target == "" {
		return w.fail(next, "symlink "+next+" has an empty target", ErrDanglingSymlink, nil)
	}
	if filepath.IsAbs(target) {
		st.dest = "/"
		st.ids = st.ids[:min(len(st.ids), 1)]
	}
	st.stack = append(st.stack, segment{rest: target, link: next})
	return nil
}

// checkFence enforces, during a confined walk, that the walk only passes
// through the root, its descendants and its ancestors (an absolute symlink
// target descends from "/" through the root's ancestors).
func (w *walker) checkFence(dest string, stack []segment) error {
	if w.fence == "" || Relate(w.fence, dest) != Disjoint {
		return nil
	}
	link := ""
	for i := len(stack) - 1; i >= 0 && link == ""; i-- {
		link = stack[i].link
	}
	return w.fail(link, "symlink "+link+" leads to "+dest+", outside "+w.fence, ErrNotConfined, nil)
}

// checkLink enforces, during a confined walk, that a symlink inside the
// root resolves inside the root. Symlinks outside it (among the root's
// own ancestors) may resolve anywhere checkFence allows.
func (w *walker) checkLink(link, dest string) error {
	if w.fence == "" || link == "" || !Contains(w.fence, link) || Contains(w.fence, dest) {
		return nil
	}
	return w.fail(link, "symlink "+link+" resolves to "+dest+", outside "+w.fence, ErrNotConfined, nil)
}

// join appends the name c to the physical directory dir.
func join(dir, c string) string {
	if dir == "/" {
		return "/" + c
	}
	return dir + "/" + c
}
