package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// The functions in this file move a worktree's directory out of the way
// and delete it afterwards. They work on directories by file descriptor
// and never follow a symbolic link below the directory given, so that a
// link planted inside cannot send a deletion elsewhere. Like the
// destructive functions, they do no safety checks of their own beyond the
// directory identity their callers pass: callers verify first.

// gitops/delete-partial: DeleteTree has deleted about half of the
// top level of a tree (tests kill it there to leave a half-deleted tree).
var fpDeletePartial = failpoint.New("gitops/delete-partial")

// A DirIdentity is the device and inode of a directory, as recorded when
// it was created.
type DirIdentity struct{ Dev, Ino uint64 }

// ErrNotSameDir means the directory at a path is not the one expected.
var ErrNotSameDir = wire.Sentinel("git_failed", "gitops: not the expected directory")

// DeleteTree deletes the directory dir and everything in it, provided dir
// is, at the moment it is opened, a directory (not a symbolic link) with
// identity id; otherwise it deletes nothing and returns an error wrapping
// ErrNotSameDir. A dir that does not exist is not an error: a deletion
// interrupted after its last step is finished.
//
// Below dir, nothing is followed: every directory is opened relative to
// its parent's descriptor with O_NOFOLLOW. Directories without write or
// search permission are given it (to their owner) first, as they must be
// to be emptied. If dir's top level holds a .git entry it is deleted last
// but one (before dir itself): an interrupted deletion leaves a directory
// that still says which worktree it was.
func DeleteTree(dir string, id DirIdentity) error {
	parent, base := filepath.Split(filepath.Clean(dir))
	pfd, err := unix.Open(parent, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &os.PathError{Op: "lstat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || uint64(st.Dev) != id.Dev || st.Ino != id.Ino {
		return fmt.Errorf("%w: %s is %d:%d (mode %o), want the directory %d:%d", ErrNotSameDir, dir, st.Dev, st.Ino, st.Mode, id.Dev, id.Ino)
	}
	fd, err := openDirAt(pfd, base)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Dev) != id.Dev || st.Ino != id.Ino {
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "fstat", Path: dir, Err: err}
		}
		return fmt.Errorf("%w: %s changed while it was opened", ErrNotSameDir, dir)
	}
	err = emptyAndRemove(pfd, fd, base, dir, true)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Fsync(pfd); err != nil {
		return &os.PathError{Op: "fsync", Path: parent, Err: err}
	}
	return nil
}

// openDirAt opens the directory name in dirfd without following a
// symbolic link, giving it search and read permission first if it lacks
// them.
func openDirAt(dirfd int, name string) (int, error) {
	flags := unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_RDONLY | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if errors.Is(err, unix.EACCES) {
		// fchmodat cannot refuse to follow a link on Linux; O_NOFOLLOW on
		// the open that follows still refuses one.
		if cerr := unix.Fchmodat(dirfd, name, 0o700, 0); cerr == nil {
			fd, err = unix.Openat(dirfd, name, flags, 0)
		}
	}
	return fd, err
}

// removeAt unlinks name in dirfd (rmdir with dir); on a permission error
// it gives dirfd's directory write permission and tries once more.
func removeAt(dirfd int, name string, dir bool) error {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	err := unix.Unlinkat(dirfd, name, flags)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		if cerr := unix.Fchmod(dirfd, 0o700); cerr == nil {
			err = unix.Unlinkat(dirfd, name, flags)
		}
	}
	return err
}

// dirEntry is a DirEntry for a name known to be a directory.
type dirEntry string

func (d dirEntry) Name() string               { return string(d) }
func (d dirEntry) IsDir() bool                { return true }
func (d dirEntry) Type() fs.FileMode          { return fs.ModeDir }
func (d dirEntry) Info() (fs.FileInfo, error) { return nil, errors.ErrUnsupported }

// TreeOf returns the id of the tree of the commit rev names, in the
// repository containing dir.
func TreeOf(ctx context.Context, dir, rev string) (string, error) {
	if rev == "" || strings.ContainsAny(rev, "\x00\n") {
		return "", fmt.Errorf("%w: %q", ErrUnknownRevision, rev)
	}
	res, err := git(ctx, dir, cmdOpts{readOnly: true}, "rev-parse", "--verify", "--end-of-options", rev+"^{tree}")
	if err != nil {
		return "", classify(err, ErrUnknownRevision, "Needed a single revision", "unknown revision")
	}
	id := strings.TrimSuffix(string(res.stdout), "\n")
	if !isObjectID(id) {
		return "", unexpected("git rev-parse", "%q is not an object id", id)
	}
	return id, nil
}

// DropWorktreeEntry deletes a worktree's administrative entry adminDir
// (<common dir>/worktrees/<id>), as `git worktree remove` does once the
// worktree's directory is gone. The entry is first moved, with one rename
// that never replaces anything, to aside (a path on the same file system
// outside the worktrees folder), where git no longer sees it; then it is
// deleted there. An interrupted drop never leaves git a half-deleted
// entry, and calling DropWorktreeEntry again with the same aside finishes
// it. The caller has verified that adminDir is the entry to drop.
func DropWorktreeEntry(adminDir, aside string) error {
	if _, err := os.Lstat(adminDir); err == nil {
		if err := MoveDir(adminDir, aside); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fi, err := os.Lstat(aside)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrNotSameDir, aside)
	}
	return DeleteTree(aside, DirIdentity{Dev: uint64(st.Dev), Ino: st.Ino})
}

// RelinkSubmodules re-attaches the checked-out submodules of the worktree
// whose top level is worktree after the worktree was moved from oldTop. A
// submodule's git directory records its work tree (core.worktree), as a
// path relative to itself, and git run in the submodule goes there: after
// a move it would name the old place. Each submodule whose .git file
// points into modulesDir (the worktree's own <admin entry>/modules, which
// did not move) and whose core.worktree names its old place gets the new
// place, as `git mv` of a submodule does; nested submodules likewise.
// Nothing else is written.
func RelinkSubmodules(ctx context.Context, worktree, oldTop, modulesDir string) error {
	subs, err := Submodules(ctx, worktree)
	if err != nil {
		return err
	}
	for _, sub := range subs {
		dir := filepath.Join(worktree, filepath.FromSlash(sub))
		old := filepath.Join(oldTop, filepath.FromSlash(sub))
		gitDir, err := worktreeGitDir(dir)
		if err != nil || !strings.HasPrefix(gitDir, modulesDir+string(filepath.Separator)) {
			continue // not checked out, or not this worktree's own: not moved with it
		}
		if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
			continue
		}
		config := filepath.Join(gitDir, "config")
		// git runs in the (moved) worktree above: run in the submodule's git
		// directory it would first go to the old place and fail.
		_, o, err := openTree(worktree)
		if err != nil {
			return err
		}
		get := o
		get.readOnly, get.okCodes = true, []int{1}
		res, err := git(ctx, worktree, get, "config", "--file", config, "--get", "core.worktree")
		if err != nil {
			return err
		}
		if res.code == 0 {
			wt := strings.TrimSuffix(string(res.stdout), "\n")
			if !filepath.IsAbs(wt) {
				wt = filepath.Join(gitDir, wt)
			}
			if filepath.Clean(wt) == old {
				if _, err := git(ctx, worktree, o, "config", "--file", config, "core.worktree", dir); err != nil {
					return err
				}
			}
		}
		if err := RelinkSubmodules(ctx, dir, old, filepath.Join(gitDir, "modules")); err != nil {
			return err
		}
	}
	return nil
}

// A TreeState is what a worktree holds, as trees, found without making a
// commit (see WorktreeTree).
type TreeState struct {
	Tree     string // the tree `git add -A` gives the worktree's files (ignored ones aside)
	Head     string // HEAD's commit; empty on an unborn branch
	HeadTree string // HEAD's tree; empty on an unborn branch
	OnBranch bool   // HEAD is a symbolic ref: its commits are on a branch
	// Outside counts the files Tree cannot hold, which a salvage keeps in
	// its meta commit: those in the folders of submodules that are not
	// checked out (Survey.Unpopulated), those whose names git refuses,
	// and those whose bytes a checkout would not give back (kept as they
	// are on disk beside the tree).
	Outside int
}

// WorktreeTree computes the tree of the worktree's files exactly as
// Snapshot does (hidden files made visible in a private copy of the index,
// then git add -A --sparse, then write-tree), HEAD's tree, and whether
// HEAD is on a branch, changing nothing and writing no commit: a caller
// that only needs to know whether anything changed since a snapshot
// leaves no unreferenced commit behind.
func WorktreeTree(ctx context.Context, worktree string) (TreeState, error) {
	sw, err := surveyWorktree(ctx, worktree, "tree")
	if err != nil {
		return TreeState{}, err
	}
	dir, ceiling, gitDir, parent, sv := sw.dir, sw.ceiling, sw.gitDir, sw.parent, sw.sv
	tmpIndex, err := copyIndex(gitDir)
	if err != nil {
		return TreeState{}, fmt.Errorf("gitops: tree of %s: %w", dir, err)
	}
	defer func() {
		os.Remove(tmpIndex)
		os.Remove(tmpIndex + ".lock")
	}()
	onTmp := cmdOpts{indexFile: tmpIndex, ceiling: ceiling}
	if err := sv.hashFlagged(ctx, dir, ceiling); err != nil {
		return TreeState{}, err
	}
	if err := sv.revealHidden(ctx, dir, ceiling, tmpIndex); err != nil {
		return TreeState{}, err
	}
	refused, err := sv.addAll(ctx, dir, ceiling, tmpIndex)
	if err != nil {
		return TreeState{}, err
	}
	if sv.mayConvert(func() bool { return indexHasAttributes(tmpIndex, sv.hashLen) }) {
		if sv.converted, err = sv.findConverted(ctx, dir, ceiling, tmpIndex); err != nil {
			return TreeState{}, err
		}
	}
	st := TreeState{Head: parent, Outside: len(sv.Unpopulated) + len(refused) + len(sv.converted)}
	res, err := git(ctx, dir, onTmp, "write-tree")
	if err != nil {
		return TreeState{}, err
	}
	st.Tree = strings.TrimSuffix(string(res.stdout), "\n")
	if !isObjectID(st.Tree) {
		return TreeState{}, unexpected("git write-tree", "%q is not an object id", st.Tree)
	}
	if parent != "" {
		res, err = git(ctx, dir, cmdOpts{readOnly: true, ceiling: ceiling}, "rev-parse", "--verify", parent+"^{tree}")
		if err != nil {
			return TreeState{}, err
		}
		st.HeadTree = strings.TrimSuffix(string(res.stdout), "\n")
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return TreeState{}, err
	}
	st.OnBranch = strings.HasPrefix(string(b), "ref: refs/heads/")
	return st, nil
}
