package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A kept trash folder (a reclaimed workspace kept for the undo window)
// must not hold its branch: git refuses to check out, delete, add a
// worktree on or restore a branch that any worktree has checked out,
// locked or not. So its HEAD is detached at the commit the branch was
// at, and put back on the branch when the workspace is restored, if the
// branch has not moved.

// A HeadState is what a worktree's HEAD names.
type HeadState struct {
	// Branch is the full ref HEAD is on ("refs/heads/x"); "" when HEAD is
	// detached.
	Branch string
	// Commit is HEAD's commit; "" when the branch is unborn.
	Commit string
}

// ReadHead reads the HEAD of the worktree whose top level is worktree, in
// process (git's own files: the worktree's HEAD, then its branch, loose
// or packed): a symbolic ref to a branch, or a detached commit.
func ReadHead(ctx context.Context, worktree string) (HeadState, error) {
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return HeadState{}, err
	}
	b, err := os.ReadFile(filepath.Join(o.GitDir, "HEAD"))
	if err != nil {
		return HeadState{}, err
	}
	line := strings.TrimSuffix(string(b), "\n")
	if ref, ok := strings.CutPrefix(line, "ref: "); ok {
		if !strings.HasPrefix(ref, "refs/heads/") {
			return HeadState{}, Unexpected(filepath.Join(o.GitDir, "HEAD"), "HEAD names %q, not a branch", ref)
		}
		res, err := Run(ctx, abs, Cmd{ReadOnly: true, Ceiling: o.Ceiling, GitDir: o.GitDir, WorkTree: abs, OKCodes: []int{1}},
			"rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
		if err != nil {
			return HeadState{}, err
		}
		id := strings.TrimSuffix(string(res.Stdout), "\n")
		if id != "" && !IsObjectID(id) {
			return HeadState{}, Unexpected("git rev-parse", "%q is not an object id", id)
		}
		return HeadState{Branch: ref, Commit: id}, nil
	}
	if !IsObjectID(line) {
		return HeadState{}, Unexpected(filepath.Join(o.GitDir, "HEAD"), "HEAD holds %q", line)
	}
	return HeadState{Commit: line}, nil
}

// DetachHead detaches the HEAD of the worktree whose top level is
// worktree at commit, provided HEAD is on branch (a full ref) at commit,
// or already detached at commit (then it does nothing): `git update-ref
// --no-deref HEAD`, which checks the old value, with a reflog message
// naming the branch. The index and the files are not touched: they stay
// those of the same commit. Anything else refuses, changing nothing
// (ErrRefChanged).
func DetachHead(ctx context.Context, worktree, branch, commit string) error {
	if !IsObjectID(commit) || !strings.HasPrefix(branch, "refs/heads/") {
		return fmt.Errorf("gitops: detach %q at %q: not a branch and a commit", branch, commit)
	}
	h, err := ReadHead(ctx, worktree)
	if err != nil {
		return err
	}
	switch {
	case h.Branch == "" && h.Commit == commit:
		return nil
	case h.Branch != branch || h.Commit != commit:
		return fmt.Errorf("%w: HEAD of %s is %s at %s, not %s at %s", ErrRefChanged, worktree, orDetached(h.Branch), h.Commit, branch, commit)
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	_, err = Run(ctx, abs, o, "update-ref", "--no-deref", "-m", "majlis: kept in the trash, detached from "+branch, "HEAD", commit, commit)
	if err != nil {
		return classifyRefUpdate(err)
	}
	// A symbolic HEAD has the same old value as its branch: check that
	// git detached it (HEAD holds the id), rather than moved the branch.
	b, err := os.ReadFile(filepath.Join(o.GitDir, "HEAD"))
	if err != nil {
		return err
	}
	if got := strings.TrimSuffix(string(b), "\n"); got != commit {
		return fmt.Errorf("%w: HEAD of %s holds %q after detaching it", ErrRefChanged, worktree, got)
	}
	return nil
}

// AttachHead puts the HEAD of the worktree whose top level is worktree
// back on branch (a full ref), provided HEAD is detached at the commit
// branch is at now (`git symbolic-ref`, with a reflog message); HEAD on
// branch already does nothing. Anything else refuses, changing nothing
// (ErrRefChanged). The caller has checked that no other worktree has the
// branch checked out.
func AttachHead(ctx context.Context, worktree, branch string) error {
	if !strings.HasPrefix(branch, "refs/heads/") {
		return fmt.Errorf("gitops: attach to %q: not a branch", branch)
	}
	h, err := ReadHead(ctx, worktree)
	if err != nil {
		return err
	}
	if h.Branch == branch {
		return nil
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	tip, err := ResolveCommitWith(ctx, abs, o, branch)
	if err != nil {
		return err
	}
	if h.Branch != "" || h.Commit != tip {
		return fmt.Errorf("%w: HEAD of %s is %s at %s, and %s is at %s", ErrRefChanged, worktree, orDetached(h.Branch), h.Commit, branch, tip)
	}
	_, err = Run(ctx, abs, o, "symbolic-ref", "-m", "majlis: restored from the trash onto "+branch, "HEAD", branch)
	return err
}

func orDetached(branch string) string {
	if branch == "" {
		return "detached"
	}
	return branch
}

// SetUnbornBranch points HEAD of the worktree whose top level is worktree
// at branch (a short name, refs/heads/ implied), which must not exist: an
// unborn branch, as `git checkout --orphan` leaves it, the index and the
// files untouched. The first commit made there creates the branch. A
// branch that exists gives ErrBranchExists and changes nothing.
func SetUnbornBranch(ctx context.Context, worktree, branch string) error {
	if err := CheckBranchName(branch); err != nil {
		return err
	}
	dir, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	ro := o
	ro.ReadOnly, ro.OKCodes = true, []int{1}
	res, err := Run(ctx, dir, ro, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return err
	}
	if res.Code == 0 {
		return fmt.Errorf("%w: %s", ErrBranchExists, branch)
	}
	_, err = Run(ctx, dir, o, "symbolic-ref", "-m", "majlis restore: unborn branch "+branch, "HEAD", ref)
	return err
}
