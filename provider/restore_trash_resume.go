package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
)

var (
	fpRestoreClaimed = failpoint.New("restore/claimed") // restore --from-trash: its claim published, nothing moved yet
	fpRestoreMoved   = failpoint.New("restore/moved")   // restore --from-trash: the folder back at its path, not yet recorded
)

// completeTrashRestore finishes a restore from the trash once the
// workspace's folder is back at its path, rec being the new claim: git's
// entry names the path again, checked-out submodules are told where
// their files are, then the new claim's created event and the old claim's
// purged event are published. Every step may run again: a restore
// resumed after an interruption (resumeRestoreTrash) repeats them.
func (p *Provider) completeTrashRestore(ctx context.Context, prev, rec *claimRecord, why string) error {
	c, mv := rec.Claim, prev.Events[EventMoved]
	if err := durable.Replace(mv.AdminEntry, "gitdir", []byte(filepath.Join(c.Path, ".git")+"\n")); err != nil {
		return err
	}
	if err := gitops.RelinkSubmodules(ctx, c.Path, mv.TrashPath, filepath.Join(mv.AdminEntry, "modules")); err != nil {
		return err
	}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return err
	}
	if _, err := p.records.Publish(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return err
	}
	reason := fmt.Sprintf("restored to its path as claim #%d", rec.Claim.Seq)
	if why != "" {
		reason += ", on a detached HEAD: " + why
	}
	if _, err := p.records.Publish(prev, Event{Kind: EventPurged, TrashPath: mv.TrashPath, Reason: reason}); err != nil {
		return err
	}
	p.log.Info("workspace restored from its trash folder", "binding", c.Binding, "path", c.Path, "detached_from", c.DetachedFrom, "why", why)
	return nil
}

// resumeRestoreTrash finishes a restore from the trash that was
// interrupted after it published its claim rec (a SIGKILL, a power cut):
// the workspace is then in its trash folder or back at its path, git's
// entry carrying the old claim's pin or the new one's. Under the old
// claim's reservation it finds the folder by its identity, then does
// again, each only if not done, what the interrupted run did: HEAD back
// on the branch the claim names, the entry's pin and lock for the new
// claim, the folder moved back, and the rest (completeTrashRestore).
// Anything else it finds refuses, changing nothing.
func (p *Provider) resumeRestoreTrash(ctx context.Context, rec *claimRecord, requestID string) (*Workspace, error) {
	c := rec.Claim
	fail := func(err error, path, reason, hint string) error {
		return &Error{Op: "restore", Binding: c.Binding, Path: path, Err: err, Reason: reason, Hint: hint}
	}
	recs, err := p.records.Binding(c.Binding)
	if err != nil {
		return nil, err
	}
	var prev *claimRecord
	for _, r := range recs {
		if mv := r.Events[EventMoved]; mv != nil && mv.TrashPath == c.FromTrash && r.Claim.Seq < c.Seq {
			prev = r
		}
	}
	if prev == nil {
		return nil, fail(ErrInterrupted, c.FromTrash, "an earlier restore with this request id was interrupted, and no reclaim of the binding names its trash folder",
			"inspect the path and the trash folder; nothing was deleted")
	}
	lease, err := p.reserve(ctx, prev, requestID)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	if rec, err = p.claimOf(c.Binding, c.Seq); err != nil {
		return nil, err
	}
	if prev, err = p.claimOf(c.Binding, prev.Claim.Seq); err != nil {
		return nil, err
	}
	if !rec.has(EventCreated) {
		if rec.has(EventFailed) {
			return nil, fail(ErrInterrupted, c.Path, "an earlier restore with this request id failed: "+rec.Events[EventFailed].Reason,
				"restore again without this request id")
		}
		if err := p.resumeTrashSteps(ctx, prev, rec, lease.Check); err != nil {
			return nil, err
		}
	}
	if err := lease.Release(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}

// resumeTrashSteps does the steps of an interrupted restore from the
// trash that it did not finish (see resumeRestoreTrash).
func (p *Provider) resumeTrashSteps(ctx context.Context, prev, rec *claimRecord, check func() error) error {
	c, mv := rec.Claim, prev.Events[EventMoved]
	fail := func(err error, path, reason, hint string) error {
		return &Error{Op: "restore", Binding: c.Binding, Path: path, Err: err, Reason: reason, Hint: hint}
	}
	want := createdIdentity(prev)
	same := func(path string) (bool, error) {
		id, err := pathid.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return err == nil && id.Dev == want.Dev && id.Ino == want.Ino, err
	}
	atPath, err := same(c.Path)
	if err != nil {
		return err
	}
	inTrash := false
	if !atPath {
		if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
			return fail(ErrPathExists, c.Path, "an interrupted restore from the trash is to be finished, and something else is at the workspace's path",
				"move it away, then retry the restore with the same request id; nothing was changed")
		}
		if inTrash, err = same(mv.TrashPath); err != nil {
			return err
		}
	}
	if !atPath && !inTrash {
		return fail(ErrIdentity, mv.TrashPath, "an interrupted restore from the trash is to be finished, and the workspace is neither at its path nor in its trash folder",
			"inspect both paths; nothing was changed")
	}
	if pin, err := gitops.ReadEntryPin(mv.AdminEntry); err != nil || (pin != prev.Digest && pin != rec.Digest) {
		return fail(ErrIdentity, mv.AdminEntry, "git's entry of the workspace carries neither the reclaimed claim's pin nor the restore's",
			"inspect it; nothing was changed")
	}
	folder := c.Path
	if inTrash {
		folder = mv.TrashPath
	}
	if err := check(); err != nil {
		return err
	}
	if !c.Detached && c.Branch != "" {
		if err := gitops.AttachHead(ctx, folder, "refs/heads/"+c.Branch); err != nil {
			return fail(ErrInterrupted, folder, "putting its HEAD back on branch "+c.Branch+": "+err.Error(),
				"its files are untouched; 'majlis workspace restore "+c.Binding+"' restores its latest salvage instead")
		}
	}
	if err := durable.Replace(mv.AdminEntry, "majlis-claim", []byte(rec.Digest+"\n")); err != nil {
		return err
	}
	if err := durable.Replace(mv.AdminEntry, "locked", []byte(lockReason(rec))); err != nil {
		return err
	}
	if inTrash {
		if err := durable.MoveDir(mv.TrashPath, c.Path); err != nil {
			return fail(ErrTrash, mv.TrashPath, "moving it back to "+c.Path+": "+err.Error(), "retry the restore with the same request id")
		}
	}
	return p.completeTrashRestore(ctx, prev, rec, "")
}
