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

	"github.com/majlis-dev/majlis/internal/durable"
)

// The functions in this file read and repair what a worktree moved to
// the trash keeps of git's; moving and deleting folders, which runs no
// git, is durable's (durable.MoveDir, durable.DeleteTree).

// TreeOf returns the id of the tree of the commit rev names, in the
// repository containing dir.
func TreeOf(ctx context.Context, dir, rev string) (string, error) {
	if rev == "" || strings.ContainsAny(rev, "\x00\n") {
		return "", fmt.Errorf("%w: %q", ErrUnknownRevision, rev)
	}
	res, err := Run(ctx, dir, Cmd{ReadOnly: true}, "rev-parse", "--verify", "--end-of-options", rev+"^{tree}")
	if err != nil {
		return "", classify(err, ErrUnknownRevision, "Needed a single revision", "unknown revision")
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if !IsObjectID(id) {
		return "", Unexpected("git rev-parse", "%q is not an object id", id)
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
		if err := durable.MoveDir(adminDir, aside); err != nil {
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
		return fmt.Errorf("%w: %s is not a directory", durable.ErrNotSameDir, aside)
	}
	return durable.DeleteTree(aside, durable.DirIdentity{Dev: uint64(st.Dev), Ino: st.Ino})
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
		gitDir, err := WorktreeGitDir(dir)
		if err != nil || !strings.HasPrefix(gitDir, modulesDir+string(filepath.Separator)) {
			continue // not checked out, or not this worktree's own: not moved with it
		}
		if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
			continue
		}
		config := filepath.Join(gitDir, "config")
		// git runs in the (moved) worktree above: run in the submodule's git
		// directory it would first go to the old place and fail.
		_, o, err := OpenTree(worktree)
		if err != nil {
			return err
		}
		get := o
		get.ReadOnly, get.OKCodes = true, []int{1}
		res, err := Run(ctx, worktree, get, "config", "--file", config, "--get", "core.worktree")
		if err != nil {
			return err
		}
		if res.Code == 0 {
			wt := strings.TrimSuffix(string(res.Stdout), "\n")
			if !filepath.IsAbs(wt) {
				wt = filepath.Join(gitDir, wt)
			}
			if filepath.Clean(wt) == old {
				if _, err := Run(ctx, worktree, o, "config", "--file", config, "core.worktree", dir); err != nil {
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
