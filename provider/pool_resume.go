package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// takenBy returns the pooled worktree's claim that rec's allocation took
// (its taken event names rec's binding and request id) and did not set
// aside, or nil.
func (p *Provider) takenBy(rec *claimRecord) (*claimRecord, error) {
	recs, err := p.poolRecords()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		ev := r.Events[EventTaken]
		if poolState(r) == wire.PoolTaken && ev.Taker == rec.Claim.Binding && ev.RequestID == rec.Claim.RequestID {
			return r, nil
		}
	}
	return nil, nil
}

// resumePoolTake resumes, for a retry with the same request id, an
// allocation that died while handing a pooled worktree out. The hand-out
// of a pooled worktree still in the pool's folder resumes (one that fails
// its checks is set aside, and the allocation then makes its worktree
// with git, its path being free); one already renamed to the workspace
// path is finished there. handled is false when the
// allocation had taken none.
func (p *Provider) resumePoolTake(ctx context.Context, rec *claimRecord) (ws *Workspace, handled bool, err error) {
	cand, err := p.takenBy(rec)
	if err != nil || cand == nil {
		return nil, err != nil, err
	}
	c := rec.Claim
	made := cand.Events[EventCreated]
	same := func(path string) bool {
		id, err := pathid.Lstat(path)
		return err == nil && id.Dev == made.Dev && id.Ino == made.Ino
	}
	switch {
	case same(cand.Claim.Path):
		// Still in the pool's folder: the request id that took it owns
		// it, and the hand-out resumes (verify, switch, lock and pin,
		// rename), from wherever the interrupted one stopped.
		ws, err := p.resumeHandOut(ctx, rec, cand)
		var pc *errPoolCheck
		if errors.As(err, &pc) {
			p.setAside(rec, cand, "the allocation of "+c.Binding+" that took it was interrupted, and its retry found: "+pc.why)
			return nil, false, nil
		}
		if ws != nil {
			ws.Pool = &PoolUse{Used: true, Name: cand.Claim.Binding}
		}
		return ws, true, err
	case !same(c.Path):
		return nil, true, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "the interrupted allocation took pooled worktree " + cand.Claim.Path + ", which is neither there nor at the workspace's path",
			Hint:   "inspect both paths; majlis will not act on them"}
	}
	entry, err := dotGitLink(c.Path, filepath.Join(c.Path, ".git"))
	if err != nil {
		return nil, true, err
	}
	if err := gitops.ReplaceLock(entry, lockReason(cand), lockReason(rec)); err != nil {
		return nil, true, err
	}
	if err := gitops.ReplaceEntryPin(entry, cand.Digest, rec.Digest); err != nil {
		return nil, true, err
	}
	if err := gitops.RepointEntry(entry, entryPath(c)); err != nil {
		return nil, true, err
	}
	head, err := gitops.ReadHead(ctx, c.Path)
	if err != nil {
		return nil, true, err
	}
	if head.Branch != "refs/heads/"+c.Branch {
		if head.Branch != "" || head.Commit != c.Base {
			return nil, true, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
				Reason: "the interrupted allocation left " + c.Path + " with HEAD at " + shortDigest(head.Commit) + ", not at its base",
				Hint:   "inspect it; majlis will not act on it"}
		}
		create := !c.Checkout
		if create {
			reader, err := gitops.OpenReader(ctx, c.CommonDir)
			if err != nil {
				return nil, true, err
			}
			if at, err := reader.ResolveCommit(ctx, "refs/heads/"+c.Branch); err == nil && at == c.Base {
				create = false // made by the interrupted allocation, at its base
			} else if err != nil && !errors.Is(err, gitops.ErrUnknownRevision) {
				return nil, true, err
			}
		}
		if err := gitops.PutHeadOnBranch(ctx, c.Path, c.Branch, c.Base, create); err != nil {
			return nil, true, err
		}
	}
	if _, err := os.Lstat(c.Path); err != nil {
		return nil, true, err
	}
	if ws, err = p.publishHandedOut(ctx, rec, cand); ws != nil {
		ws.Pool = &PoolUse{Used: true, Name: cand.Claim.Binding}
	}
	return ws, true, err
}
