package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

// RestoreFromTrash undoes the reclaim of binding's workspace whose trash
// folder was kept (reclaim --keep-trash) and has not been purged: the
// directory is moved back to its path with one rename that never
// replaces anything, git's entry is pointed at it again, and a new claim
// of the binding (the next seq, with the old claim's path, branch, base
// and intent) takes it over: git's entry is pinned and locked for the new
// claim, and the old claim gets a purged event. The salvage refs the
// reclaim made stay.
//
// It refuses (changing nothing) when the binding is live, when no kept
// trash is there, when the trash folder is not the workspace (identity,
// .git link, git's entry and its pin), or when something is at the path.
// A retry with the same requestID returns the restored workspace.
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
	if rec, err := p.findRequestClaim(binding, requestID); err != nil {
		return nil, err
	} else if rec != nil {
		if err := p.checkRequest(requestID, args); err != nil {
			return nil, err
		}
		if !rec.has(EventCreated) {
			return nil, fail(ErrInterrupted, rec.Claim.Path, "an earlier restore with this request id was interrupted",
				"inspect the path and the trash folder; nothing was deleted")
		}
		return p.view(ctx, rec, false)
	}
	recs, err := p.readBinding(binding)
	if err != nil {
		return nil, err
	}
	if err := liveBindingError(binding, recs); err != nil {
		return nil, err
	}
	var prev *claimRecord
	if n := len(recs); n > 0 {
		prev = recs[n-1]
	}
	if prev == nil || prev.Events[EventReclaimed] == nil || prev.Events[EventReclaimed].TrashPath == "" ||
		prev.Events[EventMoved] == nil || prev.has(EventPurged) {
		return nil, fail(ErrNotFound, "", "its last reclaim kept no trash folder (or it was deleted)",
			"only a reclaim that keeps its trash can be undone; the salvage refs (refs/majlis/salvage/"+binding+"/*) hold the work")
	}
	mv := prev.Events[EventMoved]
	c := prev.Claim
	trash := mv.TrashPath

	// The old claim's reservation keeps a purge (the next reclaim) away.
	lease, err := p.reserve(ctx, prev, requestID)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	if repointed, err := p.verifyMoved(prev, mv); err != nil || !repointed {
		if err == nil {
			err = errors.New("git's entry does not point at the trash folder")
		}
		return nil, fail(ErrIdentity, trash, "the trash folder is not the workspace as reclaim left it: "+err.Error(), "inspect it; nothing was changed")
	}
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		return nil, fail(ErrPathExists, c.Path, "something is at the workspace's path", "move it away, then restore again; nothing was changed")
	}

	claim := c
	claim.RequestID, claim.CreatedAt, claim.OwnerPID, claim.OwnerStart, claim.Restore = requestID, p.now().UTC(), 0, 0, ""
	if claim.Allocator, err = procid.Of(os.Getpid()); err != nil {
		return nil, err
	}
	rec, err := p.publishClaim(ctx, claim, args, nil, p.loadClaimsIndex)
	if err != nil {
		return nil, err
	}
	undo := func(cause error) error {
		if _, err := p.publishEvent(rec, Event{Kind: EventFailed, Reason: cause.Error()}); err != nil {
			cause = errors.Join(cause, err)
		}
		return cause
	}
	// The reservation is still ours before the first effect (it keeps a
	// purge away, and another restore).
	if err := lease.Check(); err != nil {
		return nil, undo(err)
	}
	// git's entry passes to the new claim: its pin and majlis's lock.
	if err := durable.Replace(mv.AdminEntry, "majlis-claim", []byte(rec.Digest+"\n")); err != nil {
		return nil, undo(err)
	}
	if err := durable.Replace(mv.AdminEntry, "locked", []byte(lockReason(rec))); err != nil {
		return nil, undo(err)
	}
	if err := gitops.MoveDir(trash, c.Path); err != nil {
		err = fmt.Errorf("moving %s back to %s: %w", trash, c.Path, err)
		_ = durable.Replace(mv.AdminEntry, "majlis-claim", []byte(prev.Digest+"\n"))
		_ = durable.Replace(mv.AdminEntry, "locked", []byte(lockReason(prev)))
		return nil, undo(err)
	}
	if err := durable.Replace(mv.AdminEntry, "gitdir", []byte(filepath.Join(c.Path, ".git")+"\n")); err != nil {
		return nil, err
	}
	if err := gitops.RelinkSubmodules(ctx, c.Path, trash, filepath.Join(mv.AdminEntry, "modules")); err != nil {
		return nil, err
	}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return nil, err
	}
	if _, err := p.publishEvent(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return nil, err
	}
	if _, err := p.publishEvent(prev, Event{Kind: EventPurged, TrashPath: trash,
		Reason: fmt.Sprintf("restored to its path as claim #%d", rec.Claim.Seq)}); err != nil {
		return nil, err
	}
	if err := lease.Release(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}
