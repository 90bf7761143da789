package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
)

// RestoreFromTrash undoes the reclaim of binding's workspace whose trash
// folder was kept (the undo window) and has not been purged: the
// directory is moved back to its path with one rename that never
// replaces anything, git's entry is pointed at it again, and a new claim
// of the binding (the next seq, with the old claim's path, base and
// intent) takes it over: git's entry is pinned and locked for the new
// claim, and the old claim gets a purged event. The salvage refs the
// reclaim made stay. The trash of any claim of the binding is found (the
// newest kept one), not only the last claim's.
//
// A kept trash folder's HEAD was detached from its branch (keep.go):
// the restore puts it back on the branch when the branch is still where
// it was and no other worktree has it checked out. Otherwise the
// workspace comes back on a detached HEAD, as it was, and the result
// names the branch (Workspace.DetachedFrom): never a branch moved under
// files that do not match it.
//
// It refuses (changing nothing) when the binding is live, when no kept
// trash is there, when a purge of it began (the folder may be half
// deleted: a purge finishes it, the salvage refs hold its work), when the
// trash folder is not the workspace (identity, .git link, git's entry and
// its pin), or when something is at the path. A retry with the same
// requestID returns the restored workspace.
func (p *Provider) RestoreFromTrash(ctx context.Context, binding, requestID string) (*Workspace, error) {
	if err := ValidBinding(binding); err != nil {
		return nil, err
	}
	fail := func(err error, path, reason, hint string) error {
		return &Error{Op: "restore", Binding: binding, Path: path, Err: err, Reason: reason, Hint: hint}
	}
	if requestID == "" {
		requestID = autoRequestPrefix + newID()[:16]
	}
	args := requestArgs{Op: "restore-trash", Binding: binding}
	if rec, err := p.records.RequestClaim(binding, requestID); err != nil {
		return nil, err
	} else if rec != nil {
		// A restore killed before its request was recorded left only its
		// claim, which names the trash folder it restores.
		if err := p.records.CheckRequest(requestID, args); err != nil && !(errors.Is(err, os.ErrNotExist) && rec.Claim.FromTrash != "") {
			return nil, err
		}
		if !rec.has(EventCreated) {
			if rec.Claim.FromTrash == "" {
				return nil, fail(ErrInterrupted, rec.Claim.Path, "an earlier allocation with this request id was interrupted",
					"inspect the path; nothing was deleted")
			}
			return p.resumeRestoreTrash(ctx, rec, requestID)
		}
		return p.view(ctx, rec, false)
	}
	recs, err := p.records.Binding(binding)
	if err != nil {
		return nil, err
	}
	if err := restoreLiveError(binding, recs); err != nil {
		return nil, err
	}
	prev, err := restorableTrash(binding, recs)
	if err != nil {
		return nil, err
	}
	// The old claim's reservation keeps a purge away, and another restore.
	lease, err := p.reserve(ctx, prev, requestID)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	// Read again under the reservation: a purge may have begun meanwhile.
	if recs, err = p.records.Binding(binding); err != nil {
		return nil, err
	}
	if err := restoreLiveError(binding, recs); err != nil {
		return nil, err
	}
	if again, err := restorableTrash(binding, recs); err != nil {
		return nil, err
	} else if again.Digest != prev.Digest {
		return nil, fail(ErrInterrupted, "", "another claim's trash became the one to restore meanwhile", "run the restore again")
	}
	mv := prev.Events[EventMoved]
	if _, err := os.Lstat(mv.TrashPath); errors.Is(err, os.ErrNotExist) {
		return nil, trashGoneError(prev, mv)
	}
	if repointed, err := p.verifyMoved(prev, mv); err != nil || !repointed {
		if errors.Is(err, ErrLocked) {
			return nil, trashLockedError("restore", prev, mv.TrashPath, err)
		}
		if err == nil {
			err = errors.New("git's entry does not point at the trash folder")
		}
		return nil, fail(ErrIdentity, mv.TrashPath, "the trash folder is not the workspace as reclaim left it: "+err.Error(), "inspect it; nothing was changed")
	}
	if _, err := os.Lstat(prev.Claim.Path); !errors.Is(err, os.ErrNotExist) {
		return nil, fail(ErrPathExists, prev.Claim.Path, "something is at the workspace's path", "move it away, then restore again; nothing was changed")
	}
	head, err := p.planTrashHead(ctx, prev)
	if err != nil {
		return nil, err
	}
	rec, err := p.restoreTrashHeld(ctx, prev, head, lease, requestID, args)
	if err != nil {
		return nil, err
	}
	if err := lease.Release(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}

// restorableTrash finds the binding's newest claim whose reclaim kept its
// trash folder and whose trash is neither purged nor being purged.
func restorableTrash(binding string, recs []*claimRecord) (*claimRecord, error) {
	var onlyEntry error
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		ev, ok := keptTrashOf(r)
		if !ok {
			continue
		}
		if path, entry := keptPath(r, ev); entry {
			if onlyEntry == nil {
				onlyEntry = keptEntryError(r, path) // git's entry alone: no folder to give back
			}
			continue
		}
		if pg := r.Events[EventPurging]; pg != nil {
			ref := "the salvage refs refs/majlis/salvage/" + binding + "/*"
			if refs := salvagesOf(r); len(refs) > 0 {
				ref = refs[len(refs)-1]
			}
			return nil, &Error{Op: "restore", Binding: binding, Path: pg.TrashPath, Err: ErrInterrupted,
				Reason: fmt.Sprintf("a purge of its trash folder began at %s and did not finish: the folder may be half deleted, and majlis will not hand it back as a workspace",
					pg.At.UTC().Format("2006-01-02 15:04:05Z")),
				Hint:    "its work is on " + ref + ", which a restore of the binding's latest salvage brings back; the next purge finishes the deletion",
				Details: map[string]any{"half_purged": true, "trash_path": pg.TrashPath}}
		}
		return r, nil
	}
	if onlyEntry != nil {
		return nil, onlyEntry
	}
	return nil, &Error{Op: "restore", Binding: binding, Err: ErrNotFound, Reason: "no reclaim of it kept a trash folder that is still there",
		Hint: "only a reclaim that keeps its trash can be undone; the salvage refs (refs/majlis/salvage/" + binding + "/*) hold the work"}
}

// A trashHead is what the restored workspace's HEAD becomes: put back on
// attach (a full ref), or left as it is in the trash folder; with the
// claim's branch fields.
type trashHead struct {
	attach       string
	branch       string // the claim's Branch ("" when detached)
	checkout     bool   // the claim's Checkout
	detachedFrom string // the branch it stays detached from, and why
	why          string
}

// planTrashHead decides, before anything changes, what the HEAD of the
// workspace in its kept trash folder becomes once restored.
func (p *Provider) planTrashHead(ctx context.Context, prev *claimRecord) (trashHead, error) {
	c, ev, mv := prev.Claim, prev.Events[EventReclaimed], prev.Events[EventMoved]
	h, err := gitops.ReadHead(ctx, mv.TrashPath)
	if err != nil {
		return trashHead{}, err
	}
	short := func(ref string) string { return strings.TrimPrefix(ref, "refs/heads/") }
	// On a branch (a trash kept before majlis detached them, or attached
	// by someone since): the folder holds the branch, so nothing else can
	// have moved it; it comes back as it is.
	if h.Branch != "" {
		name := short(h.Branch)
		return trashHead{branch: name, checkout: c.Checkout || name != c.Branch}, nil
	}
	detached := trashHead{detachedFrom: short(ev.Branch)}
	if ev.Branch == "" || h.Commit != ev.Head {
		if ev.Branch != "" {
			detached.why = "its HEAD was moved in the trash folder since the reclaim"
		}
		return detached, nil
	}
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return trashHead{}, err
	}
	tip, err := reader.ResolveCommit(ctx, ev.Branch)
	switch {
	case errors.Is(err, gitops.ErrUnknownRevision):
		detached.why = "the branch was deleted since the reclaim"
		return detached, nil
	case err != nil:
		return trashHead{}, err
	case tip != ev.Head:
		detached.why = fmt.Sprintf("the branch moved since the reclaim (from %s to %s)", short12(ev.Head), short12(tip))
		return detached, nil
	}
	wts, err := gitops.ListWorktrees(ctx, c.CommonDir)
	if err != nil {
		return trashHead{}, err
	}
	for _, w := range wts {
		if w.Branch == ev.Branch {
			detached.why = "the branch is checked out at " + w.Path
			return detached, nil
		}
	}
	name := short(ev.Branch)
	return trashHead{attach: ev.Branch, branch: name, checkout: c.Checkout || name != c.Branch}, nil
}

func short12(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// restoreTrashHeld publishes the new claim and moves the workspace back,
// under the old claim's reservation; it returns the new claim's record.
func (p *Provider) restoreTrashHeld(ctx context.Context, prev *claimRecord, head trashHead, lease *reservation.Session, requestID string, args requestArgs) (*claimRecord, error) {
	c, mv := prev.Claim, prev.Events[EventMoved]
	trash := mv.TrashPath
	claim := c
	claim.RequestID, claim.CreatedAt, claim.OwnerPID, claim.OwnerStart, claim.Restore = requestID, p.now().UTC(), 0, 0, ""
	claim.FromTrash, claim.Branch, claim.Checkout, claim.Detached, claim.DetachedFrom = trash, head.branch, head.checkout, head.branch == "", ""
	if claim.Detached {
		claim.DetachedFrom = head.detachedFrom
	}
	var err error
	if claim.Allocator, err = procid.Of(os.Getpid()); err != nil {
		return nil, err
	}
	rec, err := p.publishClaim(ctx, claim, args, nil, p.records.Index)
	if err != nil {
		return nil, err
	}
	if err := p.inject(ctx, fpRestoreClaimed); err != nil {
		return nil, err
	}
	undo := func(cause error) error {
		if head.attach != "" {
			if err := gitops.DetachHead(context.WithoutCancel(ctx), trash, head.attach, prev.Events[EventReclaimed].Head); err != nil {
				cause = errors.Join(cause, err)
			}
		}
		if _, err := p.records.Publish(rec, Event{Kind: EventFailed, Reason: cause.Error()}); err != nil {
			cause = errors.Join(cause, err)
		}
		return cause
	}
	// The reservation is still ours before the first effect.
	if err := lease.Check(); err != nil {
		return nil, undo(err)
	}
	if head.attach != "" {
		if err := gitops.AttachHead(ctx, trash, head.attach); err != nil {
			return nil, undo(err)
		}
	}
	// git's entry passes to the new claim: its pin and majlis's lock.
	if err := durable.Replace(mv.AdminEntry, "majlis-claim", []byte(rec.Digest+"\n")); err != nil {
		return nil, undo(err)
	}
	if err := durable.Replace(mv.AdminEntry, "locked", []byte(lockReason(rec))); err != nil {
		return nil, undo(err)
	}
	if err := durable.MoveDir(trash, c.Path); err != nil {
		err = fmt.Errorf("moving %s back to %s: %w", trash, c.Path, err)
		_ = durable.Replace(mv.AdminEntry, "majlis-claim", []byte(prev.Digest+"\n"))
		_ = durable.Replace(mv.AdminEntry, "locked", []byte(lockReason(prev)))
		return nil, undo(err)
	}
	if err := p.inject(ctx, fpRestoreMoved); err != nil {
		return nil, err
	}
	if err := p.completeTrashRestore(ctx, prev, rec, head.why); err != nil {
		return nil, err
	}
	return rec, nil
}
