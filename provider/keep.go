package provider

// The undo window: a reclaim keeps the workspace in its trash folder for
// trash.keep (default a day) unless told otherwise, so that restore
// --from-trash brings back everything, ignored files included. A kept
// trash folder must not hold its branch (git refuses to check out,
// delete, add a worktree on or restore a branch another worktree has
// checked out): its HEAD is detached at the branch's commit, and the
// branch is recorded, so that a restore puts it back on the branch if
// the branch has not moved.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// keepFor returns how long the reclaim o keeps its trash: o.KeepTrash when
// set, none with o.DeleteTrash, else the policy's trash.keep. A policy
// that cannot be read refuses, before anything is done.
func (p *Provider) keepFor(o ReclaimOptions) (time.Duration, error) {
	switch {
	case o.DeleteTrash:
		return 0, nil
	case o.KeepTrash > 0:
		return o.KeepTrash, nil
	case o.KeepTrash < 0:
		return 0, &Error{Op: "reclaim", Binding: o.Binding, Err: ErrInvalidArgument, Reason: "a negative time to keep the trash"}
	}
	tp, err := p.TrashPolicy()
	if err != nil {
		return 0, err
	}
	return tp.Keep, nil
}

// keptHead reads the HEAD of the workspace in its trash folder before it
// is kept: the branch and commit to detach it from, recorded in the
// checked event. A HEAD on an unborn branch, or detached, is not
// detached: ("", "").
func keptHead(ctx context.Context, trash string) (branch, head string, err error) {
	h, err := gitops.ReadHead(ctx, trash)
	if err != nil {
		return "", "", err
	}
	if h.Branch == "" || h.Commit == "" {
		return "", "", nil
	}
	return h.Branch, h.Commit, nil
}

// detachKept detaches the HEAD of the kept trash folder from its branch,
// as the checked event ck recorded it, and returns the branch and commit
// it was detached from, for the reclaimed event. A HEAD already detached
// (by a run before this one) is left; one that someone moved to another
// branch since is detached where it is now (the branch keeps its
// commits; what the folder holds is salvaged again before it is purged).
func detachKept(ctx context.Context, trash string, ck *Event) (branch, head string, err error) {
	if ck.Branch != "" {
		// As recorded (or detached already by an interrupted run).
		if err := gitops.DetachHead(ctx, trash, ck.Branch, ck.Head); err == nil {
			return ck.Branch, ck.Head, nil
		} else if !errors.Is(err, gitops.ErrRefChanged) {
			return "", "", err
		}
	}
	h, err := gitops.ReadHead(ctx, trash)
	if err != nil {
		return "", "", err
	}
	switch {
	case h.Branch == "" && h.Commit == ck.Head && ck.Branch != "":
		return ck.Branch, ck.Head, nil // detached by an interrupted run
	case h.Branch == "" || h.Commit == "":
		return "", "", nil
	}
	if err := gitops.DetachHead(ctx, trash, h.Branch, h.Commit); err != nil {
		return "", "", fmt.Errorf("detaching the kept trash's HEAD from %s: %w", h.Branch, err)
	}
	return h.Branch, h.Commit, nil
}

// trashInside names the workspace or linked worktree, among a preview's
// peers, that the trash folder of a workspace at path (and physical)
// would lie inside: its trash is a sibling of it, so inside whatever
// contains it. Such a trash is not kept: kept, it would be a retained
// peer inside that workspace, refusing its reclaim for the whole undo
// window (the main worktree, which is never reclaimed, does not count).
func trashInside(path, physical string, peers []Peer) string {
	for _, pr := range peers {
		if pr.Kind != PeerWorkspace && pr.Kind != PeerWorktree {
			continue
		}
		for _, p := range []string{path, physical} {
			if p != pr.Path && pathid.Contains(pr.Path, p) {
				return pr.Path
			}
		}
	}
	return ""
}
