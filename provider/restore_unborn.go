package provider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
)

// restoreUnborn restores a salvage taken while HEAD was an unborn branch:
// a branch with no commit yet (`git checkout --orphan`), or the
// workspace's branch deleted under it, which git then sees the same way.
// The new workspace gets what the old one had: HEAD on that branch, still
// unborn, with the salvage's files and its index (every file staged as
// new, as git showed it). A deleted branch's last commit is not lost: the
// salvage pins it (from HEAD's reflog), and the restored reflog names it.
//
// The branch must not exist now, nor be HEAD of another worktree: majlis
// never moves a branch, and two worktrees on one unborn branch would each
// see the other's first commit as their own. With o.Branch the workspace
// goes on that new, unborn branch instead.
//
// git cannot add a worktree on an unborn branch (before 2.42), so the
// worktree is added detached at the salvage's index commit, which has no
// parent, filled from the salvage, and only then is HEAD pointed at the
// branch: a failure before that leaves a detached worktree that the
// allocation's undo recognises as its own and removes.
func (p *Provider) restoreUnborn(ctx context.Context, o RestoreOptions, reader *gitops.Reader, ref, commit string, layout salvage.Layout) (*RestoreResult, error) {
	fail := func(err error, reason, hint string) error {
		return &Error{Op: "restore", Binding: o.Binding, Reason: reason, Hint: hint, Err: err}
	}
	name, ok := strings.CutPrefix(layout.Branch, "refs/heads/")
	if o.Branch != "" {
		name, ok = o.Branch, true
	}
	if layout.Version < 2 || !ok || name == "" || layout.Index == "" {
		return nil, fail(ErrMalformed, ref+" records an unborn HEAD but no branch of it", "inspect it with git log -1 "+ref)
	}
	if err := gitops.CheckBranchName(name); err != nil {
		return nil, fail(ErrInvalidArgument, err.Error(), "")
	}
	if at, err := reader.ResolveCommit(ctx, "refs/heads/"+name); err == nil {
		return nil, &Error{Op: "restore", Binding: o.Binding, Err: ErrBranchExists,
			Reason:  fmt.Sprintf("%s was taken on branch %s before its first commit, and %s now exists at %s; majlis never moves a branch", ref, name, name, at),
			Hint:    "restore onto a new branch name",
			Details: map[string]any{"branch": name}}
	} else if !errors.Is(err, gitops.ErrUnknownRevision) {
		return nil, err
	}
	wts, err := gitops.ListWorktrees(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	for _, w := range wts {
		if w.Branch != "refs/heads/"+name {
			continue
		}
		e := &Error{Op: "restore", Binding: o.Binding, Path: w.Path, Err: ErrBranchExists,
			Reason:  fmt.Sprintf("the worktree at %s is on branch %s, which has no commit yet", w.Path, name),
			Hint:    "restore onto a new branch name",
			Details: map[string]any{"branch": name}}
		if strings.HasPrefix(filepath.Base(w.Path), trashPrefix+o.Binding+".") {
			// The undo window keeps the reclaimed workspace there, on its
			// branch (a HEAD with no commit cannot be detached).
			e.Reason = fmt.Sprintf("the kept trash of %s (%s) is on branch %s, which has no commit yet", o.Binding, w.Path, name)
			e.Hint = "restore the workspace from its trash instead (it holds everything, ignored files included), or restore the salvage onto a new branch name"
			e.Details["kept_trash"] = w.Path
		}
		return nil, e
	}
	ao := AllocateOptions{Binding: o.Binding, Path: o.Path, Base: layout.Index, RequestID: o.RequestID, restore: ref, mode: gitops.Detached}
	var report salvage.RestoreReport
	ao.populate = func(ctx context.Context, path string) error {
		var err error
		if report, err = salvage.RestoreInto(ctx, path, commit, layout); err != nil {
			return err
		}
		return gitops.SetUnbornBranch(ctx, path, name)
	}
	ws, err := p.Allocate(ctx, ao)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Op == "allocate" {
			pe.Op = "restore"
		}
		return nil, err
	}
	ws.Branch, ws.Head = name, ""
	res := &RestoreResult{Workspace: ws, SalvageRef: ref, Commit: commit, Layout: layout.Version, Branch: &name, Unborn: true,
		Restored: append([]string{"HEAD on branch " + name + ", which has no commit yet"}, nonNil(report.Restored)...), NotRestored: nonNil(report.NotRestored)}
	return res, nil
}
