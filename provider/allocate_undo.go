package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

// made says what an allocation created before it failed.
type made struct{ worktree, branch bool }

// undoAllocation removes what a failed allocation made (the worktree it
// just created, the branch it just created at the base) and marks the
// claim failed, so the binding is free again. It never touches anything
// the allocation did not make. It returns cause, wrapped.
func (p *Provider) undoAllocation(ctx context.Context, rec *claimRecord, cause error, m made) error {
	// An interrupted allocation (Ctrl-C cancels ctx) is undone all the
	// same: the undo's git commands must run.
	ctx = context.WithoutCancel(ctx)
	c := rec.Claim
	var notes []string
	if !m.worktree {
		// nothing to remove
	} else if wts, err := gitops.ListWorktrees(ctx, c.CommonDir); err == nil {
		for _, w := range wts {
			ours := c.Detached && w.Detached || !c.Detached && w.Branch == "refs/heads/"+c.Branch ||
				// made detached and locked with this claim's reason, and
				// stopped before it was put on its branch (see gitops's
				// AddWorktree with many worktrees)
				w.Detached && w.Head == c.Base && w.Locked && w.LockReason == lockReason(rec)
			if (w.Path == c.Path || w.Path == c.PhysicalPath) && ours {
				// Created by this very allocation moments ago: nothing of
				// anyone else's can be in it yet.
				_ = gitops.UnlockWorktree(ctx, c.CommonDir, w.Path)
				if err := gitops.RemoveWorktree(ctx, c.CommonDir, w.Path, true); err != nil {
					notes = append(notes, "could not remove the new worktree: "+err.Error())
				}
			}
		}
	}
	if !m.branch {
		// not ours
	} else if err := gitops.DeleteRef(ctx, c.CommonDir, "refs/heads/"+c.Branch, c.Base); err != nil &&
		!errors.Is(err, gitops.ErrRefChanged) && !errors.Is(err, gitops.ErrUnknownRevision) {
		notes = append(notes, "could not delete branch "+c.Branch+": "+err.Error())
	}
	reason := cause.Error()
	if len(notes) > 0 {
		reason += " (" + strings.Join(notes, "; ") + ")"
	}
	if _, err := p.records.Publish(rec, Event{Kind: EventFailed, Reason: reason}); err != nil {
		notes = append(notes, "could not mark the claim failed: "+err.Error())
	}
	var pe *Error
	if errors.As(cause, &pe) {
		return cause
	}
	err := &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: cause}
	if errors.Is(cause, gitops.ErrBranchExists) && c.Checkout {
		err.Err, err.Reason = ErrBranchCheckedOut, cause.Error()
	} else if errors.Is(cause, gitops.ErrBranchExists) {
		err.Err, err.Reason = ErrBranchExists, cause.Error()
	} else if errors.Is(cause, gitops.ErrPathExists) {
		err.Err, err.Reason = ErrPathExists, cause.Error()
	}
	if len(notes) > 0 {
		err.Hint = strings.Join(notes, "; ")
	}
	return err
}

// resumeAllocation finishes, or reports, an allocation started with the
// same request id.
func (p *Provider) resumeAllocation(ctx context.Context, rec *claimRecord) (*Workspace, error) {
	c := rec.Claim
	switch {
	case rec.has(EventCreated):
		return p.view(ctx, rec, false)
	case rec.has(EventFailed):
		return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "request " + c.RequestID + " failed earlier: " + rec.Events[EventFailed].Reason,
			Hint:   "retry with a new request id"}
	}
	if live, why := procid.Judge(c.Allocator); live != procid.Dead {
		return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrBindingLive,
			Reason: "request " + c.RequestID + " is still being carried out (" + why + ")",
			Hint:   "wait for it to finish"}
	}
	// The allocator died between the claim and the created event.
	if c.Restore != "" {
		// A restore's worktree is filled from its salvage, which only the
		// restore itself does: it is not finished here. With nothing at
		// the path, the claim is marked failed (the binding is free again
		// and the salvage untouched); a restore may be run again.
		if _, err := os.Lstat(c.Path); errors.Is(err, os.ErrNotExist) {
			if _, err := p.records.Publish(rec, Event{Kind: EventFailed, Reason: "the restore was interrupted before its worktree was made"}); err != nil {
				return nil, err
			}
			return nil, &Error{Op: "restore", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
				Reason: "the restore of " + c.Restore + " was interrupted before its worktree was made",
				Hint:   "restore it again, with a new request id"}
		}
		return nil, &Error{Op: "restore", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "the restore of " + c.Restore + " was interrupted: " + c.Path + " may be partly filled",
			Hint:   "inspect it (the salvage " + c.Restore + " is untouched); if it holds nothing of yours, remove it with git worktree remove --force and run the restore again"}
	}
	if ws, handled, err := p.resumePoolTake(ctx, rec); handled {
		return ws, err
	}
	wts, err := gitops.ListWorktrees(ctx, c.CommonDir)
	if err != nil {
		return nil, err
	}
	if changed, err := p.resumeStepsWorktree(ctx, rec, wts); err != nil {
		return nil, err
	} else if changed {
		if wts, err = gitops.ListWorktrees(ctx, c.CommonDir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(c.Path); errors.Is(err, os.ErrNotExist) {
		// A branch the dead allocator's git created at the base, checked
		// out nowhere, is its own: remove it so the add can run again.
		// (Only allocation creates branches; restore claims returned above.)
		// A branch that existed before the claim (--checkout) is never
		// the allocator's: it is never deleted.
		inUse := c.Checkout || c.Detached
		for _, w := range wts {
			inUse = inUse || w.Branch == "refs/heads/"+c.Branch
		}
		if !inUse {
			if err := gitops.DeleteRef(ctx, c.CommonDir, "refs/heads/"+c.Branch, c.Base); err != nil &&
				!errors.Is(err, gitops.ErrUnknownRevision) && !errors.Is(err, gitops.ErrRefChanged) {
				return nil, err
			}
		}
		return p.createWorktree(ctx, rec, nil)
	}
	for _, w := range wts {
		if (w.Path == c.Path || w.Path == c.PhysicalPath) && w.Head == c.Base && w.Branch == "refs/heads/"+c.Branch && checkedOut(rec) {
			if err := pinEntry(rec); err != nil {
				return nil, err
			}
			id, err := pathid.Lstat(c.Path)
			if err != nil {
				return nil, err
			}
			if _, err := p.records.Publish(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
				return nil, err
			}
			return p.view(ctx, rec, false)
		}
	}
	return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
		Reason: "the interrupted allocation left " + c.Path + " in a state majlis cannot verify",
		Hint:   "inspect it; if it holds nothing of yours, unlock and remove it (git worktree unlock, then git worktree remove --force) and retry with the same request id"}
}

// resumeStepsWorktree takes up the worktree that the many-worktrees add
// (gitops's AddWorktree with many worktrees) leaves when its allocator
// dies between making it and putting HEAD on the branch: at the claim's
// path, detached at the base, locked with this claim's own reason.
//   - Holding nothing but its .git file (the crash came before the
//     checkout wrote a file), nothing in it can be anyone's: it is
//     removed, and the allocation is made again.
//   - Checked out and clean (the crash came after the checkout), the add
//     is finished: the branch, HEAD on it, the hook, none of which touches
//     a file. git's own add, killed with majlis, finishes on its own.
//
// Anything else (a checkout cut short, files written since) is left as
// it is, and the retry refuses. It reports whether it changed anything.
func (p *Provider) resumeStepsWorktree(ctx context.Context, rec *claimRecord, wts []gitops.Worktree) (bool, error) {
	c := rec.Claim
	if c.Checkout || c.Detached {
		return false, nil // the steps make a new branch only
	}
	for _, w := range wts {
		if (w.Path != c.Path && w.Path != c.PhysicalPath) || !w.Detached || w.Head != c.Base ||
			!w.Locked || w.LockReason != lockReason(rec) {
			continue
		}
		if !onlyGitFile(w.Path) {
			st, err := gitops.ReadStatus(ctx, w.Path, gitops.StatusOptions{})
			if err != nil || !st.Detached || st.Head != c.Base || !st.Clean() {
				return false, nil
			}
			if err := gitops.FinishAddInSteps(ctx, c.CommonDir, w.Path, c.Branch, c.Base); err != nil {
				if errors.Is(err, gitops.ErrBranchExists) {
					return false, nil
				}
				return true, err
			}
			return true, nil
		}
		if err := gitops.UnlockWorktree(ctx, c.CommonDir, w.Path); err != nil {
			return false, err
		}
		if !onlyGitFile(w.Path) { // written to meanwhile: left, locked again
			_ = gitops.LockWorktree(ctx, c.CommonDir, w.Path, lockReason(rec))
			return false, nil
		}
		if err := gitops.RemoveWorktree(ctx, c.CommonDir, w.Path, true); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// onlyGitFile reports whether dir holds nothing but a regular file .git.
func onlyGitFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 1 && entries[0].Name() == ".git" && entries[0].Type().IsRegular()
}

// checkedOut reports whether the worktree of rec has an index: git
// writes it last, once the files are checked out (a checkout interrupted
// before has none, and its files may be partly written).
func checkedOut(rec *claimRecord) bool {
	dir, err := verifyRepository("allocate", rec)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, "index"))
	return err == nil && fi.Mode().IsRegular()
}
