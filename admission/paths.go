package admission

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/majlis-dev/majlis/pathid"
)

// Path safety: every file and intent path is turned into a canonical key
// before it reaches a ledger. A key is the path's physical location relative
// to the top-level directory of its checkout, slash-separated and clean, ""
// for the root itself, so that every spelling of one file (an absolute or a
// relative path, a path through a symlink inside the checkout, a path
// through a symlink to the checkout) yields one key, and the same key names
// the same repository file in every worktree.
//
// Whatever cannot be named that way is refused with ErrUnsafePath rather
// than guessed: see Checkout.Key.

// A Checkout is one worktree that admission paths are confined to.
type Checkout struct {
	Root string // physical top-level directory of the worktree
	Fold bool   // keys are case-folded: the filesystem was positively identified as case-insensitive
}

// OpenCheckout resolves root physically and probes its case sensitivity; a
// probe error fails closed (returned). root must be the worktree's
// top-level directory; it may be reached through symlinks.
//
// Fold is set only when the file system holding root is positively
// identified as case-insensitive. The probe first looks up root's ".git"
// entry under the name ".GIT", which writes nothing: finding no such entry,
// or a different file, proves the directory keeps case, and finding the
// very same directory (or the same single-linked file, in a linked
// worktree) proves it folds case. Only when that is inconclusive (no .git
// entry, a hard-linked .git file) does it fall back to
// pathid.CaseInsensitive, which creates and removes a probe file in root. A
// probe file is avoided where possible because a concurrent "git status"
// or "git add -A" in the checkout would see it.
//
// The answer holds for root itself; subdirectories are assumed to fold
// alike (on Linux, ext4 and f2fs case folding is a per-directory attribute,
// inherited by new subdirectories).
//
// Every error is an *Error with Op "path" wrapping ErrUnsafePath: a
// checkout whose identity or case rule cannot be established cannot have
// safe keys.
func OpenCheckout(root string) (Checkout, error) {
	refuse := func(reason, hint string) (Checkout, error) {
		return Checkout{}, &Error{Op: "path", Path: root, Reason: reason, Hint: hint, Err: ErrUnsafePath}
	}
	if root == "" || strings.IndexByte(root, 0) >= 0 {
		return refuse("the checkout root is empty or contains a NUL byte", "pass the worktree's top-level directory")
	}
	phys, err := pathid.Physical(root)
	if err != nil {
		reason, hint := describe(err)
		return refuse("cannot resolve the checkout root: "+reason, hint)
	}
	fi, err := os.Stat(phys)
	if err != nil {
		return refuse("cannot read the checkout root "+phys+": "+errText(phys, err), "pass the worktree's top-level directory")
	}
	if !fi.IsDir() {
		return refuse("the checkout root "+phys+" is not a directory", "pass the worktree's top-level directory")
	}
	fold, err := caseFolds(phys, os.Lstat)
	if err != nil {
		reason, _ := describe(err)
		return refuse("cannot tell whether the file system of "+phys+" folds letter case: "+reason,
			"make the checkout root readable and writable (majlis probes it with a temporary file), then retry")
	}
	return Checkout{Root: phys, Fold: fold}, nil
}

// caseFolds reports whether the directory dir, a physical path, is
// positively identified as case-insensitive (see OpenCheckout). lstat is
// os.Lstat; tests replace it to simulate a folding file system.
func caseFolds(dir string, lstat func(string) (fs.FileInfo, error)) (bool, error) {
	lower := filepath.Join(dir, ".git")
	fl, err := lstat(lower)
	if err != nil {
		return pathid.CaseInsensitive(dir)
	}
	fu, err := lstat(filepath.Join(dir, ".GIT"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil // a folding directory would have found .git
	case err != nil:
		return pathid.CaseInsensitive(dir)
	}
	idl, errl := pathid.FileIDOf(fl)
	idu, erru := pathid.FileIDOf(fu)
	if errl != nil || erru != nil {
		return pathid.CaseInsensitive(dir)
	}
	if !idl.Equal(idu) {
		// Two distinct entries whose names differ only in case can
		// coexist only in a directory that keeps case.
		return false, nil
	}
	// One file under both names: folding, unless ".GIT" is a hard link of
	// ".git" in a case-keeping directory. Directories cannot be hard
	// linked, and a file with one link has no second name.
	if fl.IsDir() {
		return true, nil
	}
	if fl.Mode().IsRegular() {
		if n, err := pathid.LinkCount(lower); err == nil && n == 1 {
			return true, nil
		}
	}
	return pathid.CaseInsensitive(dir)
}

const (
	hintInside = "name the file by its path inside the checkout"
	hintGit    = "name a file of the working tree; Git's own data is not leased"
)

// CheckWritten applies the rules of Key that need no file system, to a path
// as the caller wrote it: not empty, no NUL byte, no ".." component, and,
// for a relative path, no ".git" component (an absolute one is judged by
// Key once it is located in a checkout, whose own path may hold one). It lets a caller refuse such a path before anything
// exists to resolve it in (majlis begin, before it allocates the
// workspace); Key applies them again.
func CheckWritten(raw string) error {
	refuse := func(reason, hint string) error {
		return &Error{Op: "path", Path: raw, Reason: reason, Hint: hint, Err: ErrUnsafePath}
	}
	switch {
	case raw == "":
		return refuse("the path is empty", hintInside)
	case strings.IndexByte(raw, 0) >= 0:
		return refuse("the path contains a NUL byte", hintInside)
	case pathid.HasDotDot(raw):
		return refuse(raw+" has a '..' component", hintInside+", without '..'")
	}
	if comp, ok := dotGit(raw); ok && !filepath.IsAbs(raw) {
		return refuse(raw+" lies in "+comp+", Git's own data", hintGit)
	}
	return nil
}

// Key returns the canonical key of raw (a file path or the literal part of
// an intent): slash-separated, clean, relative to c.Root, "" for the root
// itself. A relative raw is taken relative to cwd when cwd lies inside the
// checkout (physically, so a working directory reached through a symlink to
// the checkout counts), else relative to c.Root; an empty cwd means c.Root.
// An absolute raw must lie inside the checkout, as written or with the
// checkout root reached through a symlink, a bind mount or, on a
// case-insensitive file system, a case variant of its name.
//
// A symlink that resolves inside the checkout is an alias: the key is that
// of its physical target. A path that does not exist yet is named through
// its closest existing ancestor. Key refuses:
//
//   - an empty path, or one with a NUL byte;
//   - a ".." component anywhere in raw as written, even one that would stay
//     inside the checkout: the caller must name the path directly;
//   - a path outside the checkout, and a relative path from a working
//     directory that lies inside the checkout as written but resolves
//     outside it;
//   - a symlink that does not resolve (dangling, a cycle) or that resolves
//     outside the checkout, whether or not the path comes back in;
//   - anything under a ".git" component (the checkout's .git directory or
//     file, or a nested repository's), as written or as resolved, compared
//     without regard to case as Git itself does (Git never tracks such a
//     path), and anything under another name of the checkout's .git (by
//     device and inode);
//   - anything in a directory below the root that has a .git entry of its
//     own (a linked worktree placed inside the checkout, a submodule,
//     another repository), and that directory itself: its files are not
//     this checkout's, and one of them would otherwise have a key here and
//     another in its own worktree;
//   - an existing regular file with more than one hard link (for file
//     leases and intents alike): it is reachable under a name no key shows;
//   - for a file lease (file set): the checkout root, an existing directory,
//     and an existing special file (pipe, socket, device);
//   - a path whose identity cannot be verified (permission errors, a file
//     used as a directory, a file system without inode numbers).
//
// When c.Fold is set, keys are lower-cased with strings.ToLower. That folds
// Unicode letters too, which on a file system folding only ASCII can merge
// two distinct names into one key: an extra conflict, never a missed one.
// Spellings the file system merges in other ways (Unicode normalization)
// are not merged.
//
// Every refusal is an *Error{Op: "path", Path: raw, Reason, Hint, Err:
// ErrUnsafePath}, its Reason naming the offending component or target. Like
// every path answer, the key describes the file system at the moment of
// the call.
func (c Checkout) Key(cwd, raw string, file bool) (string, error) {
	return c.key(nil, cwd, raw, file)
}

// key is Key; with batch set, the paths of one request are resolved
// together, the directories they share looked up once (pathid.Resolver).
func (c Checkout) key(batch *pathid.Resolver, cwd, raw string, file bool) (string, error) {
	refuse := func(reason, hint string) (string, error) {
		return "", &Error{Op: "path", Path: raw, Reason: reason, Hint: hint, Err: ErrUnsafePath}
	}
	refuseErr := func(prefix string, err error) (string, error) {
		reason, hint := describe(err)
		return refuse(prefix+reason, hint)
	}
	if err := CheckWritten(raw); err != nil {
		return "", err
	}
	switch {
	case !filepath.IsAbs(c.Root):
		return refuse("the checkout root "+c.Root+" is not an absolute path", "open the checkout with OpenCheckout")
	}

	// rel: raw relative to the root, as written (Confine resolves it).
	rel, err := c.relative(cwd, raw)
	if err != nil {
		return "", err
	}

	if comp, ok := dotGit(rel); ok {
		return refuse(raw+" lies in "+comp+", Git's own data", hintGit)
	}
	if rel == "" {
		rel = "."
	}
	confine := pathid.Confine
	if batch != nil {
		confine = batch.Confine
	}
	phys, err := confine(c.Root, rel)
	if err != nil {
		from := ""
		if !filepath.IsAbs(raw) && rel != raw {
			from = "from the working directory " + cwd + ": "
		}
		return refuseErr(from, err)
	}
	key, ok := below(c.Root, phys)
	if !ok {
		// Confine resolved the root anew and found it elsewhere.
		return refuse(raw+" resolves to "+phys+", outside the checkout "+c.Root+", which has moved",
			"open the checkout again, then retry")
	}
	if comp, ok := dotGit(key); ok {
		return refuse(raw+" resolves to "+phys+", in "+comp+", Git's own data", hintGit)
	}
	if first, _, _ := strings.Cut(key, "/"); first != "" {
		// The checkout's .git under a name Git's rules do not see (one
		// the file system folds or ignores characters in, a hard link).
		isGit, err := c.isDotGit(first)
		if err != nil {
			return refuseErr("cannot tell whether "+c.Root+"/"+first+" is the checkout's .git: ", err)
		}
		if isGit {
			return refuse(raw+" resolves to "+phys+", in "+c.Root+"/.git under the name "+first, hintGit)
		}
	}
	if nested, err := c.nestedRepository(key); err != nil {
		return refuseErr("cannot tell whether "+raw+" lies in a nested repository or worktree: ", err)
	} else if nested != "" {
		return refuse(raw+" resolves to "+phys+", inside "+nested+", another worktree or repository (it has its own .git)",
			"lease it in that worktree (run majlis there), where it has a key of its own")
	}
	if c.Fold {
		key = strings.ToLower(key)
	}
	if key == "" && file {
		return refuse(raw+" is the checkout root "+c.Root+", a directory",
			"lease a file inside the checkout, or use an intent (intent:DIR/**) for a directory")
	}

	if err := checkKind(raw, phys, file); err != nil {
		return "", err
	}
	return key, nil
}

// relative returns raw relative to the checkout's root, as written: an
// absolute path must lie inside the checkout; a relative one is taken from
// cwd when cwd lies inside it.
func (c Checkout) relative(cwd, raw string) (string, error) {
	refuse := func(reason, hint string) (string, error) {
		return "", &Error{Op: "path", Path: raw, Reason: reason, Hint: hint, Err: ErrUnsafePath}
	}
	if filepath.IsAbs(raw) {
		r, ok, err := c.locate(raw)
		if err != nil {
			reason, hint := describe(err)
			return refuse("cannot tell whether "+raw+" lies in the checkout "+c.Root+": "+reason, hint)
		}
		if !ok {
			return refuse(raw+" lies outside the checkout "+c.Root, hintInside)
		}
		return r, nil
	}
	base, err := c.base(cwd)
	if err != nil {
		reason, hint := describe(err)
		return refuse("working directory "+cwd+": "+reason, hint)
	}
	if base != "" {
		return base + "/" + raw, nil
	}
	return raw, nil
}

// checkKind refuses what phys (the resolved form of raw) cannot be leased
// as: a hard-linked file, a directory for a file lease, a special file, a
// symbolic link created since it was resolved. A path that does not exist
// yet is named through its closest existing ancestor, and passes.
func checkKind(raw, phys string, file bool) error {
	refuse := func(reason, hint string) error {
		return &Error{Op: "path", Path: raw, Reason: reason, Hint: hint, Err: ErrUnsafePath}
	}
	fi, err := os.Lstat(phys)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return refuse("cannot read "+phys+": "+errText(phys, err), hintInside)
	}
	switch mode := fi.Mode(); {
	case mode.IsRegular():
		n, err := pathid.LinkCount(phys)
		if err != nil {
			reason, hint := describe(err)
			return refuse("cannot count the hard links of "+phys+": "+reason, hint)
		}
		if n > 1 {
			return refuse(phys+" is a hard-linked file with "+strconv.FormatUint(n, 10)+" links",
				"a hard-linked file is reachable under another name; copy it instead of linking")
		}
	case mode.IsDir():
		if file {
			return refuse(phys+" is a directory", "lease a file, or use an intent (intent:DIR/**) for a directory")
		}
	case mode&fs.ModeSymlink != 0:
		// Confine resolved every symlink; one here was created since.
		return refuse(phys+" changed while it was checked (it is now a symlink)", "retry")
	default:
		if file {
			return refuse(phys+" is a "+kindOf(mode)+", not a regular file", "lease a regular file")
		}
	}
	return nil
}

// base returns the working directory cwd relative to the checkout root, as
// a prefix for relative paths: "" when cwd is empty, is the root, or lies
// outside the checkout.
func (c Checkout) base(cwd string) (string, error) {
	if cwd == "" {
		return "", nil
	}
	if !pathid.HasDotDot(cwd) {
		// Lexically inside: keep the components as written so that
		// Confine holds every symlink in them to the checkout. A working
		// directory inside the checkout as written but resolving outside
		// it is refused there.
		if rel, ok := below(c.Root, filepath.Clean(cwd)); ok {
			return rel, nil
		}
	}
	phys, err := pathid.Physical(cwd)
	if err != nil {
		return "", err
	}
	rel, ok, err := c.locate(phys)
	if err != nil || !ok {
		return "", err
	}
	return rel, nil
}

// locate returns the absolute path p (without "..") relative to the root,
// as written ("" for the root itself): p lies in the checkout when one of its ancestors (or p
// itself) is the root's physical path, or, found by device and inode, the
// root reached another way: through a symlink, a bind mount, or a case
// variant on a case-insensitive file system. The shallowest such ancestor
// is taken, so that every component of the rest is held to the checkout by
// Confine. ok is false when p lies outside.
func (c Checkout) locate(p string) (rel string, ok bool, err error) {
	p = filepath.Clean(p)
	if rel, ok := below(c.Root, p); ok {
		return rel, true, nil
	}
	root, err := pathid.Stat(c.Root)
	if err != nil {
		return "", false, err
	}
	for i := 0; i < len(p); i++ {
		if i != 0 && p[i] != '/' {
			continue
		}
		prefix := p[:i]
		if i == 0 {
			prefix = "/"
		}
		id, err := pathid.Stat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing directory can be the root.
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if id.Equal(root) {
			return strings.TrimPrefix(p[i:], "/"), true, nil
		}
	}
	id, err := pathid.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return "", id.Equal(root), nil
}

// dotGit returns the first component of the slash-separated path p that
// names Git's own data: ".git" in any letter case, as Git itself compares
// it (it refuses to track such a path, case-sensitive file system or not).
func dotGit(p string) (string, bool) {
	for comp := range strings.SplitSeq(p, "/") {
		if strings.EqualFold(comp, ".git") {
			return comp, true
		}
	}
	return "", false
}

// isDotGit reports whether the entry name of the checkout root is the
// checkout's .git directory or file, by device and inode.
func (c Checkout) isDotGit(name string) (bool, error) {
	git, err := pathid.Lstat(c.Root + "/.git")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	id, err := pathid.Lstat(c.Root + "/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return id.Equal(git), nil
}

// nestedRepository returns the directory, below the root, at or above the
// physical key that holds a .git entry of its own: a linked worktree
// placed inside this checkout, a submodule or another repository. Its
// files are not this checkout's: the same file has a key in that worktree,
// and Git here does not track it. "" when there is none.
func (c Checkout) nestedRepository(key string) (string, error) {
	if key == "" {
		return "", nil
	}
	dir := c.Root
	for comp := range strings.SplitSeq(key, "/") {
		dir += "/" + comp
		_, err := os.Lstat(dir + "/.git")
		switch {
		case err == nil:
			return dir, nil
		case errors.Is(err, fs.ErrNotExist):
			if _, err := os.Lstat(dir); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return "", nil // nothing exists below an absent directory
				}
				return "", err
			}
		case errors.Is(err, syscall.ENOTDIR):
			return "", nil // dir is a file: the end of the path
		default:
			return "", err
		}
	}
	return "", nil
}

// describe turns an error from pathid (or the OS) into a reason naming the
// component or symlink concerned, and a hint.
func describe(err error) (reason, hint string) {
	hint = "name the file by its path inside the checkout"
	var pe *pathid.Error
	if !errors.As(err, &pe) {
		return err.Error(), hint
	}
	reason = pe.Reason
	if pe.Err != nil {
		if reason != "" {
			reason += ": "
		}
		reason += errText(pe.Path, pe.Err)
	}
	if reason == "" && pe.Kind != nil {
		reason = strings.TrimPrefix(pe.Kind.Error(), "pathid: ")
	}
	if pe.At != "" && !strings.Contains(reason, pe.At) {
		reason += " at " + pe.At
	}
	if reason == "" {
		reason = err.Error()
	}
	switch {
	case errors.Is(err, pathid.ErrNotConfined):
		hint = "name the file by its path inside the checkout; a symlink in the checkout must point inside it"
	case errors.Is(err, pathid.ErrDanglingSymlink):
		hint = "create the symlink's target or remove the symlink, then retry"
	case errors.Is(err, pathid.ErrSymlinkLoop):
		hint = "break the symlink cycle, then retry"
	case errors.Is(err, pathid.ErrNoIdentity):
		hint = "keep the checkout on a file system that reports device and inode numbers"
	case errors.Is(err, fs.ErrPermission):
		hint = "make the directories on the path readable, then retry"
	}
	return reason, hint
}

// errText formats an OS error, naming its path unless it is path itself.
func errText(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return pe.Err.Error()
	}
	return err.Error()
}

// below returns the clean absolute path p relative to root ("" for root
// itself), when p is root or lies beneath it.
func below(root, p string) (string, bool) {
	rel, ok := pathid.Below(root, p)
	if rel == "." {
		rel = ""
	}
	return rel, ok
}

// kindOf names the type of a file that is neither regular nor a directory.
func kindOf(m fs.FileMode) string {
	switch m.Type() {
	case fs.ModeNamedPipe:
		return "named pipe"
	case fs.ModeSocket:
		return "socket"
	case fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
		return "device"
	}
	return "special file"
}
