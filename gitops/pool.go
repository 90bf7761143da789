package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
)

// The git operations of the warm pool (the provider's pool*.go).

// AddPoolWorktree adds a linked worktree at path, HEAD detached at
// commit, locked with reason, its files checked out, and runs no hook:
// a pooled worktree is made ahead of any task, and its post-checkout hook
// runs when it is handed out (RunPostCheckout), as `git worktree add`
// would have run it then. dir is any directory of the repository.
func AddPoolWorktree(ctx context.Context, dir, path, commit, reason string) error {
	if path == "" || commit == "" || reason == "" {
		return errors.New("gitops: a pooled worktree needs a path, a commit and a lock reason")
	}
	co, args := checkoutOpts(ctx)
	args = append([]string{"-c", "core.hooksPath=" + noHooksDir}, args...)
	args = append(args, "--detach", "--lock", "--reason", reason, "--", path, commit)
	err := addRetryingPartial(ctx, path, func() error {
		_, err := Run(ctx, dir, co, args...)
		return err
	}, func() bool { return true })
	err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
	return classify(err, ErrUnknownRevision, "fatal: invalid reference: ", "fatal: not a valid object name: ")
}

// noHooksDir is a hooks folder that holds no hook on any system.
const noHooksDir = "/dev/null"

// SwitchPooled switches the clean worktree whose top level is worktree,
// HEAD detached at from, to commit to, touching only the files that
// differ between the two commits' trees (`git read-tree -m -u FROM TO`,
// git's two-tree merge, which refuses a file that differs from FROM in
// the index or on disk), then moves HEAD, still detached, from from to
// to. No hook runs.
func SwitchPooled(ctx context.Context, worktree, from, to string) error {
	if !IsObjectID(from) || !IsObjectID(to) {
		return fmt.Errorf("gitops: switch %q to %q: not commit ids", from, to)
	}
	if from == to {
		return nil
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	head := filepath.Join(o.GitDir, "HEAD")
	if b, err := os.ReadFile(head); err != nil || strings.TrimSpace(string(b)) != from {
		return fmt.Errorf("%w: HEAD of %s is not detached at %s", ErrRefChanged, worktree, from)
	}
	attrs, err := attributesDiffer(ctx, abs, o, from, to)
	if err != nil {
		return err
	}
	args := []string{"-c", "core.hooksPath=" + noHooksDir, "read-tree", "-m", "-u", "--end-of-options", from, to}
	if _, err := Run(ctx, abs, o, args...); err != nil {
		return err
	}
	// The switch writes only the files that differ: with other
	// attributes at to, the others must be written again as a checkout
	// at to would write them.
	if attrs {
		if err := checkOutAll(ctx, abs, o, to); err != nil {
			return err
		}
	}
	// HEAD is detached and the worktree the caller's alone: it is written
	// whole, as git writes a detached HEAD (one process fewer than
	// update-ref; no reflog entry).
	return durable.Replace(o.GitDir, "HEAD", []byte(to+"\n"))
}

// PutHeadOnBranch puts the detached HEAD (at commit) of the worktree
// whose top level is worktree on branch (a short name): a new branch
// created at commit (create; ErrRefExists when it exists), or an existing
// one that is at commit. The files and the index are not touched: they
// are commit's already.
func PutHeadOnBranch(ctx context.Context, worktree, branch, commit string, create bool) error {
	if err := CheckBranchName(branch); err != nil {
		return err
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(o.GitDir, "HEAD")); err != nil || strings.TrimSpace(string(b)) != commit {
		return fmt.Errorf("%w: HEAD of %s is not detached at %s", ErrRefChanged, worktree, commit)
	}
	if create {
		err = createHeadBranch(ctx, abs, o, branch, commit)
	} else {
		// `git switch` from the same commit touches no file: it checks
		// out the existing branch (refused when another worktree has
		// it) and moves HEAD. No hook.
		_, err = Run(ctx, abs, o, "-c", "core.hooksPath="+noHooksDir, "switch", "--quiet", "--no-guess", "--end-of-options", branch)
		if err == nil {
			if h, herr := ReadHead(ctx, worktree); herr != nil || h.Commit != commit {
				return fmt.Errorf("%w: %s is not at %s", ErrRefChanged, branch, commit)
			}
		}
	}
	if err != nil {
		return err
	}
	return writeAddedHeadLog(o.GitDir, commit)
}

// createHeadBranch creates branch at commit (`git branch`, which
// refuses one that exists: ErrRefExists) and points the detached HEAD of
// the worktree at abs, at commit already, at it (`git symbolic-ref`, with
// the reflog entry a switch writes). Files and index are commit's: unlike
// `git switch --create`, nothing compares the index with the files again,
// which after a two-tree switch re-reads every file it wrote in the
// index's second (racily clean).
func createHeadBranch(ctx context.Context, abs string, o Cmd, branch, commit string) error {
	_, err := Run(ctx, abs, o, "-c", "core.hooksPath="+noHooksDir, "branch", "--no-track", "--end-of-options", branch, commit)
	if err != nil {
		return classify(err, ErrRefExists, "fatal: a branch named ")
	}
	_, err = Run(ctx, abs, o, "symbolic-ref", "-m", "checkout: moving from "+commit+" to "+branch, "HEAD", "refs/heads/"+branch)
	return err
}

// RunPostCheckout runs the post-checkout hook of the worktree whose top
// level is worktree, if there is one, as `git -C dir worktree add` runs
// it for a new worktree (dir: the directory AddWorktree is given): the
// hook git finds from dir, in the worktree, with the null old HEAD, the
// new HEAD and the flag 1 (a branch checkout), and no GIT_DIR or
// GIT_WORK_TREE (runPostCheckout). A hook that fails gives an error.
func RunPostCheckout(ctx context.Context, dir, worktree, head string) error {
	return runPostCheckout(ctx, worktree, head, lookUpPostCheckout(ctx, dir))
}

// RepointEntry points git's entry adminDir of a linked worktree at the
// worktree's new place (its back-pointer gitdir, written whole), after
// the worktree was renamed there, as `git worktree repair` would, but
// without git looking for the worktree.
func RepointEntry(adminDir, worktree string) error {
	return durable.Replace(adminDir, "gitdir", []byte(filepath.Join(worktree, ".git")+"\n"))
}

// ReplaceEntryPin replaces the pin of git's entry adminDir, from to to,
// only when it holds from (or to already): a pooled worktree handed out
// becomes the workspace's.
func ReplaceEntryPin(adminDir, from, to string) error {
	got, err := ReadEntryPin(adminDir)
	if err != nil {
		return err
	}
	switch got {
	case to:
		return nil
	case from:
		return durable.Replace(adminDir, pinFile, []byte(to+"\n"))
	}
	return fmt.Errorf("%w: %s holds %q", ErrPinMismatch, filepath.Join(adminDir, pinFile), got)
}

// ReplaceLock replaces the lock reason of git's entry adminDir, from to
// to, only when it is locked with from (or to already): the worktree
// stays locked throughout (the lock file is replaced whole).
func ReplaceLock(adminDir, from, to string) error {
	cur, err := ReadWorktreeLock(adminDir)
	if err != nil {
		return err
	}
	switch {
	case cur.Locked && cur.Reason == to:
		return nil
	case cur.Locked && cur.Reason == from:
		return durable.Replace(adminDir, "locked", []byte(to+"\n")) // as git writes it
	}
	if !cur.Locked {
		return fmt.Errorf("gitops: worktree entry %s is not locked", adminDir)
	}
	return &LockedError{AdminDir: adminDir, Reason: cur.Reason}
}

// RefreshIndex refreshes the stat data in the index of the worktree
// whose top level is worktree (`git update-index -q --refresh`): entries
// git wrote "racily clean" (in the same second as the index) are read
// once more and written with their real stat data, so that later
// commands need not read those files again. It reports whether every
// entry matched its file.
func RefreshIndex(ctx context.Context, worktree string) (clean bool, err error) {
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return false, err
	}
	o.OKCodes = []int{1}
	res, err := Run(ctx, abs, o, "update-index", "-q", "--refresh")
	return err == nil && res.Code == 0, err
}
