package provider

// Reclaim never runs a destructive step on the workspace's path. Once the
// work is salvaged and the checks have passed, the workspace is moved with
// one rename(2) into a trash folder beside it (same parent folder, so the
// same file system), still locked, so that no `git worktree prune` can
// drop git's entry of it. A path-based writer then finds the path gone
// rather than its files erased. In the trash reclaim verifies that what it
// moved is the workspace, snapshots it again (a second salvage ref holds
// anything written since the first), and only then deletes it, unless the
// trash is kept (--keep-trash).
//
// The move is recorded (the moved event, naming the trash folder and git's
// admin entry) before the rename, so that after a crash at any point the
// workspace is at its path or in its trash folder, locked and recorded,
// and a retry finishes the job from whichever state it finds.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

var (
	fpReclaimBeforeMove   = failpoint.New("reclaim/before-move")   // checks done, not yet renamed
	fpReclaimMoved        = failpoint.New("reclaim/moved")         // renamed, git's entry not yet repointed
	fpReclaimRepaired     = failpoint.New("reclaim/repaired")      // git's entry points into the trash
	fpReclaimResalvaged   = failpoint.New("reclaim/resalvaged")    // second snapshot stored, not yet recorded
	fpReclaimBeforeDelete = failpoint.New("reclaim/before-delete") // recorded as checked, trash not yet deleted
)

// trashPrefix starts the name of every trash folder. A trash folder is a
// sibling of the workspace at the same depth, so that the relative links
// inside it (a submodule's .git file, a worktree's .git written with
// relative paths) still resolve after the move.
const trashPrefix = ".majlis-trash-"

// newTrashPath names a fresh trash folder for the claim:
// <parent>/.majlis-trash-<binding>.<seq>.<random>.
func newTrashPath(c *Claim) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s%s.%d.%s", trashPrefix, c.Binding, c.Seq, hex.EncodeToString(b[:]))
	return filepath.Join(filepath.Dir(c.Path), name), nil
}

// trashBinding returns the binding whose trash folder path names
// (newTrashPath's form), or "".
func trashBinding(path string) string {
	rest, ok := strings.CutPrefix(filepath.Base(path), trashPrefix)
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return ""
	}
	j := strings.LastIndexByte(rest[:i], '.')
	if j <= 0 {
		return ""
	}
	return rest[:j]
}

// adminAside is where git's admin entry of a claim's workspace is moved to
// be deleted (see gitops.DropWorktreeEntry): in the state folder, on the
// file system of the common dir.
func (p *Provider) adminAside(c *Claim) string {
	return filepath.Join(p.stateDir, "trash", fmt.Sprintf("%s.%06d.admin", c.Binding, c.Seq))
}

func createdIdentity(rec *claimRecord) durable.DirIdentity {
	ev := rec.Events[EventCreated]
	return durable.DirIdentity{Dev: ev.Dev, Ino: ev.Ino}
}

// moveAside records the move, re-checks everything, renames the workspace
// into its trash folder and finishes the reclaim from there.
func (p *Provider) moveAside(ctx context.Context, rec *claimRecord, entry *adminEntry, lease *reservation.Session, o ReclaimOptions, res *ReclaimResult) (*ReclaimResult, error) {
	c := rec.Claim
	trash, err := newTrashPath(&c)
	if err != nil {
		return nil, err
	}
	if err := p.recheck(ctx, rec, lease); err != nil {
		return nil, err
	}
	// Recorded before the rename, so that a crash after it finds the
	// workspace. A retry finds the event already published: the folder
	// named then is the one to use.
	ev, err := p.records.Publish(rec, Event{Kind: EventMoved, TrashPath: trash, AdminEntry: entry.dir, RequestID: o.RequestID})
	if err != nil {
		return nil, err
	}
	if ev.AdminEntry != entry.dir {
		return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
			Reason: fmt.Sprintf("git's entry of the workspace is now %s; the reclaim recorded %s", entry.dir, ev.AdminEntry),
			Hint:   "majlis will not act on it; inspect 'git worktree list --porcelain'"}
	}
	if err := p.inject(ctx, fpReclaimBeforeMove); err != nil {
		return nil, err
	}
	if err := durable.MoveDir(c.Path, ev.TrashPath); err != nil {
		if errors.Is(err, durable.ErrCrossDevice) {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Peer: ev.TrashPath, Err: ErrCrossDevice,
				Reason: "renaming it into its trash folder would cross file systems (a bind mount?), and majlis never copies a workspace across",
				Hint:   "nothing was changed; unmount it, or remove it by hand", Details: map[string]any{"trash_path": ev.TrashPath}}
		}
		return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Peer: ev.TrashPath, Err: ErrTrash,
			Reason: "moving the workspace into its trash folder: " + err.Error(),
			Hint:   "nothing was changed; inspect the path and its folder", Details: map[string]any{"trash_path": ev.TrashPath}}
	}
	if err := p.inject(ctx, fpReclaimMoved); err != nil {
		return nil, err
	}
	res.StepsDone = append(res.StepsDone, "move")
	p.log.Debug("workspace moved into its trash folder", "binding", c.Binding, "trash_path", ev.TrashPath)
	return p.finishMoved(ctx, rec, ev, lease, o, res, true, true)
}

// reclaimMoved resumes a reclaim that recorded a move (the moved event)
// and was interrupted. handled is false when the workspace is still at
// its path (never renamed, or renamed back): the usual way then decides.
func (p *Provider) reclaimMoved(ctx context.Context, rec *claimRecord, o ReclaimOptions, args requestArgs) (res *ReclaimResult, handled bool, err error) {
	c := rec.Claim
	ev := rec.Events[EventMoved]
	want := createdIdentity(rec)
	inTrash := false
	id, err := pathid.Lstat(ev.TrashPath)
	switch {
	case err == nil && id.Dev == want.Dev && id.Ino == want.Ino:
		inTrash = true
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
			return nil, false, nil
		}
		// Neither at its path nor in the trash: deleted by this reclaim
		// (or by hand). What is left is git's entry and the record.
	case err != nil:
		return nil, true, &Error{Op: "reclaim", Binding: c.Binding, Path: ev.TrashPath, Err: ErrIdentity, Reason: err.Error()}
	default:
		return nil, true, driftError(rec, ev, "the workspace's trash folder holds another directory than the workspace")
	}
	lease, err := p.reserve(ctx, rec, o.RequestID)
	if err != nil {
		return nil, true, err
	}
	defer lease.Release()
	ctx, cancel := lease.Context(ctx)
	defer cancel()
	defer func() { err = p.lostOr(c.Binding, lease, err) }()
	res = &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{}}
	reclaimArrays(res)
	if res, err = p.finishMoved(ctx, rec, ev, lease, o, res, inTrash, false); err != nil {
		return nil, true, err
	}
	if o.RequestID != "" {
		if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
			return nil, true, err
		}
	}
	return res, true, lease.Release()
}

// finishMoved takes a workspace from its trash folder to the end: it
// verifies it, points git's entry at it, salvages it again (unless a run
// before did, the checked event), deletes or keeps it, and records the
// reclaim. inTrash is false when the trash folder is already gone.
// undoable says whether this run made the move, so that a mismatch can
// move it back.
func (p *Provider) finishMoved(ctx context.Context, rec *claimRecord, ev *Event, lease *reservation.Session, o ReclaimOptions, res *ReclaimResult, inTrash, undoable bool) (*ReclaimResult, error) {
	c := rec.Claim
	trash := ev.TrashPath
	// A mismatch found in the trash puts the workspace back, unless the
	// reservation is lost: then nothing more is done, not even that; it
	// stays in its trash folder, recorded, and a retry resumes there.
	undo := func(repointed bool, cause error) error {
		if err := lease.Check(); err != nil {
			return err
		}
		return p.undoMove(rec, ev, undoable, repointed, cause)
	}
	if inTrash && !rec.has(EventChecked) {
		if err := p.checkMoved(ctx, rec, ev, o, res, undo); err != nil {
			return nil, err
		}
	}
	if ck := rec.Events[EventChecked]; ck != nil && ck.SalvageRef != "" {
		ref := ck.SalvageRef
		res.SecondSalvageRef = &ref
		if len(res.SalvageRefs) == 0 || res.SalvageRefs[len(res.SalvageRefs)-1] != ref {
			res.SalvageRefs = append(res.SalvageRefs, ref)
		}
	}

	reclaimed := Event{Kind: EventReclaimed, RequestID: o.RequestID}
	if ck := rec.Events[EventChecked]; ck != nil && ck.KeepUntil != nil && inTrash {
		// Kept: its HEAD lets go of the branch (keep.go).
		var err error
		if reclaimed.Branch, reclaimed.Head, err = detachKept(ctx, trash, ck); err != nil {
			return nil, err
		}
		until := *ck.KeepUntil
		reclaimed.TrashPath, reclaimed.KeepUntil = trash, &until
		res.TrashPath, res.TrashKeptUntil = trash, &until
		res.StepsDone = append(res.StepsDone, "keep-trash")
	} else {
		if err := lease.Check(); err != nil {
			return nil, err
		}
		if now, err := p.records.Current("reclaim", c.Binding); err != nil {
			return nil, err
		} else if now.Digest != rec.Digest {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Err: ErrIdentity, Reason: "the binding's claim changed during the reclaim"}
		}
		if err := p.inject(ctx, fpReclaimBeforeDelete); err != nil {
			return nil, err
		}
		if err := p.deleteTrash(rec, ev); err != nil {
			return nil, err
		}
		res.StepsDone = append(res.StepsDone, "delete-trash")
	}
	if err := p.inject(ctx, fpReclaimRemoved); err != nil {
		return nil, err
	}
	res.Removed = true
	// Whatever appeared at the old path since the move is someone else's:
	// left alone, and reported.
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		res.PathOccupied = true
	}
	if sv := rec.Events[EventSalvaged]; sv != nil {
		ref := sv.SalvageRef // the first salvage, perhaps by an interrupted run
		reclaimed.SalvageRef = ref
		res.SalvageRef = &ref
		if len(res.SalvageRefs) == 0 || res.SalvageRefs[0] != ref {
			res.SalvageRefs = append([]string{ref}, res.SalvageRefs...)
		}
	}
	if _, err := p.records.Publish(rec, reclaimed); err != nil {
		return nil, err
	}
	if err := p.inject(ctx, fpReclaimRecorded); err != nil {
		return nil, err
	}
	return res, nil
}

// checkMoved verifies the workspace in its trash folder, points git's
// entry at it, salvages it again when it holds anything new, and records
// all of it in the checked event, with the decision to keep the trash (and
// the branch its HEAD will be detached from).
func (p *Provider) checkMoved(ctx context.Context, rec *claimRecord, ev *Event, o ReclaimOptions, res *ReclaimResult, undo func(bool, error) error) error {
	c := rec.Claim
	trash := ev.TrashPath
	repointed, err := p.verifyMoved(rec, ev)
	if err != nil {
		return undo(false, err)
	}
	if !repointed {
		// git's entry names the worktree's .git file by path: written
		// whole (temporary file, fsync, rename), as `git worktree
		// repair` would, but without git looking for the worktree.
		if err := durable.Replace(ev.AdminEntry, "gitdir", []byte(filepath.Join(trash, ".git")+"\n")); err != nil {
			return undo(true, err)
		}
	}
	if err := p.inject(ctx, fpReclaimRepaired); err != nil {
		return err
	}
	// git itself, run plainly in the trash folder, must now find the
	// workspace and its entry there.
	if err := gitops.CheckWorkTree(ctx, trash); err != nil {
		return undo(true, err)
	}
	// Checked-out submodules keep their git directories in the admin
	// entry, which did not move; they are told where their files are.
	if err := gitops.RelinkSubmodules(ctx, trash, c.Path, filepath.Join(ev.AdminEntry, "modules")); err != nil {
		return err
	}
	second, err := p.resalvage(ctx, rec, trash, res)
	if err != nil {
		return err
	}
	if err := p.inject(ctx, fpReclaimResalvaged); err != nil {
		return err
	}
	// Whether the trash is kept is decided here, once, and recorded:
	// a retry after a crash keeps or deletes as this run would have
	// (a deletion cut short is never kept, nor restored).
	checked := Event{Kind: EventChecked, SalvageRef: second}
	if o.KeepTrash > 0 {
		until := p.now().UTC().Add(o.KeepTrash)
		checked.KeepUntil = &until
		if checked.Branch, checked.Head, err = keptHead(ctx, trash); err != nil {
			return err
		}
	}
	if _, err := p.records.Publish(rec, checked); err != nil {
		return err
	}
	return nil
}

// verifyMoved checks that the directory in the trash folder is the
// workspace: the directory allocated (device and inode), whose .git file
// points to the admin entry recorded in the moved event, which carries
// majlis's pin for this claim, is locked by nobody else, and points back
// at the workspace's old place or its trash folder (repointed).
func (p *Provider) verifyMoved(rec *claimRecord, ev *Event) (repointed bool, err error) {
	c := rec.Claim
	trash := ev.TrashPath
	want := createdIdentity(rec)
	id, err := pathid.Lstat(trash)
	if err != nil {
		return false, fmt.Errorf("the trash folder: %w", err)
	}
	if fi, err := os.Lstat(trash); err != nil || !fi.IsDir() || id.Dev != want.Dev || id.Ino != want.Ino {
		return false, fmt.Errorf("what was moved is not the directory allocated (device/inode %d:%d, recorded %d:%d)", id.Dev, id.Ino, want.Dev, want.Ino)
	}
	gitdir, err := dotGitLink(trash, filepath.Join(trash, ".git"))
	if err != nil {
		return false, fmt.Errorf("what was moved has no .git link: %w", err)
	}
	if gitdir != filepath.Clean(ev.AdminEntry) {
		return false, fmt.Errorf("what was moved points to %s, not to the workspace's entry %s", gitdir, ev.AdminEntry)
	}
	entry, err := verifyAdminEntry("reclaim", rec, ev.AdminEntry, false)
	if err != nil {
		return false, err
	}
	if !entry.pinned {
		return false, fmt.Errorf("git's entry %s lost majlis's pin", ev.AdminEntry)
	}
	back, err := os.ReadFile(filepath.Join(ev.AdminEntry, "gitdir"))
	if err != nil {
		return false, err
	}
	backPath := strings.TrimRight(string(back), "\n")
	for _, old := range []string{c.Path, c.PhysicalPath} {
		if backPath == filepath.Join(old, ".git") {
			return false, nil
		}
	}
	if backPath == filepath.Join(trash, ".git") {
		return true, nil
	}
	return false, fmt.Errorf("git's entry %s points to %s, neither the workspace's path nor its trash folder", ev.AdminEntry, backPath)
}

// undoMove answers a mismatch found after the move. It deletes nothing:
// when this run made the move it puts the directory back (and git's entry
// with it, if it was repointed), but only if nothing has taken the path
// meanwhile (the rename never replaces); otherwise the directory stays in
// the trash folder and the refusal names both places.
func (p *Provider) undoMove(rec *claimRecord, ev *Event, undoable, repointed bool, cause error) error {
	c := rec.Claim
	if !undoable {
		return driftError(rec, ev, cause.Error())
	}
	if err := durable.MoveDir(ev.TrashPath, c.Path); err != nil {
		return driftError(rec, ev, cause.Error()+"; it stays in the trash folder, since it could not be moved back: "+err.Error())
	}
	// git's entry follows it back (it was re-pointed only after the
	// directory was verified to be the workspace's).
	if repointed {
		if err := durable.Replace(ev.AdminEntry, "gitdir", []byte(filepath.Join(c.Path, ".git")+"\n")); err != nil {
			cause = errors.Join(cause, err)
		}
	}
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
		Reason: cause.Error() + "; it was moved back to its path, unchanged",
		Hint:   "majlis will not act on it; inspect the path", Details: map[string]any{"path": c.Path, "trash_path": ev.TrashPath}}
}

func driftError(rec *claimRecord, ev *Event, why string) error {
	c := rec.Claim
	return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Peer: ev.TrashPath, Err: ErrIdentity,
		Reason:  fmt.Sprintf("%s (path %s, trash folder %s)", why, c.Path, ev.TrashPath),
		Hint:    "majlis deleted nothing; inspect both places, and move the workspace back by hand if it is yours",
		Details: map[string]any{"path": c.Path, "trash_path": ev.TrashPath}}
}

// resalvage salvages the workspace in its trash folder again, when it
// holds anything the last salvage of the reclaim (or, with none, its
// branch) does not: first the tree of its files is computed without a
// commit; only when that or HEAD differs is a salvage made and stored on
// a new salvage ref. It returns the ref, or "".
func (p *Provider) resalvage(ctx context.Context, rec *claimRecord, trash string, res *ReclaimResult) (string, error) {
	c := rec.Claim
	st, err := salvage.WorktreeTree(ctx, trash)
	if err != nil {
		return "", err
	}
	last, lastMeta, sameFiles := "", "", false
	if n := len(res.SalvageRefs); n > 0 {
		last = res.SalvageRefs[n-1]
	} else if sv := rec.Events[EventSalvaged]; sv != nil {
		last = sv.SalvageRef
	}
	// Nothing new: the same files as the last salvage, on the same HEAD
	// (its commits are held by that salvage); or, with no salvage, HEAD's
	// files on a branch (which is kept).
	if last != "" {
		_, layout, err := salvage.Read(ctx, c.CommonDir, last)
		if err != nil {
			return "", err
		}
		tree, err := gitops.TreeOf(ctx, c.CommonDir, last)
		if err != nil {
			return "", err
		}
		// Files in submodule folders not checked out are in no tree:
		// with any there, the snapshot below compares them too.
		sameFiles, lastMeta = st.Tree == tree && st.Head == layout.Head, layout.Meta
		if sameFiles && st.Outside == 0 {
			return "", nil
		}
	} else if st.OnBranch && st.Tree == st.HeadTree && st.Outside == 0 {
		return "", nil
	}
	msg := fmt.Sprintf("majlis reclaim of workspace %s: what it held once moved aside\n\nMajlis-Binding: %s\nMajlis-Claim: %s\nMajlis-Path: %s\nMajlis-Trash: %s\n",
		c.Binding, c.Binding, rec.Digest, c.Path, trash)
	snap, err := salvage.Snapshot(ctx, trash, msg)
	if err != nil {
		return "", err
	}
	if snap.Clean {
		return "", nil
	}
	if sameFiles {
		then, err := salvage.OutsideTree(ctx, c.CommonDir, lastMeta)
		if err != nil {
			return "", err
		}
		now, err := salvage.OutsideTree(ctx, c.CommonDir, snap.Layout.Meta)
		if err != nil {
			return "", err
		}
		if then == now {
			return "", nil // the commit made is left to git gc
		}
	}
	ref, err := p.storeSalvage(ctx, c.Binding, snap.Commit)
	if err != nil {
		return "", err
	}
	res.SalvageRefs = append(res.SalvageRefs, ref)
	res.StepsDone = append(res.StepsDone, "resalvage")
	return ref, nil
}

// deleteTrash deletes the workspace's trash folder (if it is still there:
// the directory allocated, checked by identity as it is opened), then
// git's admin entry, once it is verified to be the workspace's own.
func (p *Provider) deleteTrash(rec *claimRecord, ev *Event) error {
	c := rec.Claim
	if err := durable.DeleteTree(ev.TrashPath, createdIdentity(rec)); err != nil {
		if errors.Is(err, durable.ErrNotSameDir) {
			return driftError(rec, ev, err.Error())
		}
		if errors.Is(err, durable.ErrCrossDevice) {
			return &Error{Op: "reclaim", Binding: c.Binding, Path: ev.TrashPath, Err: ErrCrossDevice,
				Reason: "deleting the trash folder stopped at a file system mounted inside it: " + err.Error(),
				Hint:   "unmount it (what is mounted there was not touched), then retry the reclaim with the same request id", Details: map[string]any{"resumable": true}}
		}
		return &Error{Op: "reclaim", Binding: c.Binding, Path: ev.TrashPath, Err: ErrTrash, Reason: "deleting the trash folder: " + err.Error(),
			Hint: "a retry of the reclaim with the same request id finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	aside := p.adminAside(&c)
	if _, err := os.Lstat(ev.AdminEntry); err == nil {
		entry, err := verifyAdminEntry("reclaim", rec, ev.AdminEntry, true)
		if err != nil {
			return err
		}
		if !entry.pinned {
			return &Error{Op: "reclaim", Binding: c.Binding, Path: ev.AdminEntry, Err: ErrIdentity,
				Reason: "git's entry of the workspace lost majlis's pin; majlis leaves it", Hint: "inspect it"}
		}
		// An entry is dropped only when the directory it names is gone:
		// never one whose worktree exists (put back at its path, say).
		if back, err := os.ReadFile(filepath.Join(ev.AdminEntry, "gitdir")); err == nil {
			named := filepath.Dir(strings.TrimRight(string(back), "\n"))
			if _, err := os.Lstat(named); !errors.Is(err, os.ErrNotExist) {
				return &Error{Op: "reclaim", Binding: c.Binding, Path: ev.AdminEntry, Peer: named, Err: ErrIdentity,
					Reason: "git's entry of the workspace names " + named + ", which exists; majlis leaves the entry", Hint: "inspect both"}
			}
		}
		if err := os.MkdirAll(filepath.Dir(aside), 0o700); err != nil {
			return err
		}
	}
	if err := gitops.DropWorktreeEntry(ev.AdminEntry, aside); err != nil {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: ev.AdminEntry, Err: ErrTrash, Reason: "deleting git's entry of the workspace: " + err.Error(),
			Hint: "a retry of the reclaim with the same request id finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	return nil
}

// movedPreview is the preview of a workspace that an interrupted reclaim
// left in its trash folder: what a retry will do. ok is false when the
// workspace is not there.
func (p *Provider) movedPreview(rec *claimRecord) (pv *Preview, ok bool) {
	c := rec.Claim
	ev := rec.Events[EventMoved]
	want := createdIdentity(rec)
	if id, err := pathid.Lstat(ev.TrashPath); err != nil || id.Dev != want.Dev || id.Ino != want.Ino {
		return nil, false
	}
	pv = &Preview{Preview: wire.Preview{Binding: c.Binding, Path: c.Path, PhysicalPath: c.PhysicalPath, Branch: c.Branch,
		ClaimDigest: rec.Digest, Released: rec.has(EventReleased), Peers: []Peer{}}}
	pv.Salvage.Clean, pv.Salvage.DirtySubmodules = true, []string{}
	pv.SpecialPaths = []salvage.SpecialFile{}
	pv.Salvage.UnpopulatedSubmoduleFiles, pv.Salvage.RefusedNames = []string{}, []string{}
	pv.AdminEntry.Path = ev.AdminEntry
	if !rec.has(EventChecked) {
		pv.Steps = append(pv.Steps, Step{Name: "resalvage", Count: 0, Detail: "an interrupted reclaim moved the workspace into " + ev.TrashPath + ": check it there and snapshot it again; anything new goes to a salvage ref"})
	}
	pv.Steps = append(pv.Steps, Step{Name: "delete-trash", Count: 0, Detail: fmt.Sprintf("delete %s and git's entry of it, unless the trash is kept; branch %s is kept", ev.TrashPath, c.Branch)})
	pv.Digest = previewDigest(pv)
	return pv, true
}

// checkMovable refuses, before any effect, a workspace that one rename
// cannot move into its trash folder: a mount point (a bind mount). A
// workspace is never copied across file systems.
func checkMovable(rec *claimRecord) error {
	c := rec.Claim
	mp, err := durable.MountPoint(c.Path)
	if err != nil {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrIdentity, Reason: err.Error()}
	}
	if mp {
		return &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrCrossDevice,
			Reason: "the workspace is a mount point (a bind mount?): no rename can move it into its trash folder, and majlis never copies a workspace",
			Hint:   "nothing was changed; unmount it, then reclaim"}
	}
	return nil
}
