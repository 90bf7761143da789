package provider

// The purge of a kept trash folder. A reclaim keeps the workspace in its
// trash folder for the undo window (trashpolicy.go); the folder is a
// worktree git lists, and a person can open it, edit and commit there. So
// a purge never deletes what it has not salvaged, however long after the
// reclaim it runs:
//
//  1. under the binding's reservation, it checks that the folder is still
//     the workspace (the directory allocated, whose git entry carries
//     majlis's pin and points at it);
//  2. snapshots it again, and stores the snapshot on a salvage ref when it
//     holds anything the reclaim's last salvage does not (files, index,
//     HEAD, per-worktree refs and reflogs, an operation's state);
//  3. records that the purge started (the purging event, naming that
//     salvage and why the trash goes): from then on the folder may be half
//     deleted, so restore --from-trash refuses it and a retry only
//     finishes the deletion;
//  4. deletes the folder (by file descriptor, by identity), then git's
//     entry of it;
//  5. records the purged event.
//
// A salvage that fails (a full disk) stops the purge before step 3: the
// folder stays whole, and the failure is reported.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
)

var (
	fpPurgeSalvaged = failpoint.New("purge/salvaged") // the purge's salvage stored, the purge not yet recorded
	fpPurgeStarted  = failpoint.New("purge/started")  // the purging event published, nothing deleted yet
	fpPurgeDeleted  = failpoint.New("purge/deleted")  // the trash folder deleted, git's entry not yet
	fpPurgeDropped  = failpoint.New("purge/dropped")  // git's entry deleted, the purged event not yet published
)

// Why a kept trash goes (KeptTrash.Due, and the reason of its purging
// and purged events).
const (
	DueExpired     = "expired"     // its time (trash.keep, or --keep-trash) is up
	DueBudget      = "max_bytes"   // early: the kept trash together is larger than trash.max_bytes
	DueSpace       = "min_free"    // early: the free space is below trash.min_free
	DueInterrupted = "interrupted" // a purge of it began and did not finish
)

// A KeptTrash is a reclaimed workspace that waits in its trash folder
// for the undo window to end. Its JSON is part of the CLI contract.
type KeptTrash struct {
	Binding string `json:"binding"`
	Seq     int    `json:"seq"`
	Path    string `json:"path"`
	// Entry: what is kept is git's entry of a workspace whose folder was
	// gone (moved or deleted by hand), in majlis's trash; Path names it.
	// restore --from-trash has no folder to give back then.
	Entry       bool      `json:"entry"`
	Branch      string    `json:"branch"` // the branch its HEAD was detached from ("" when none)
	ReclaimedAt time.Time `json:"reclaimed_at"`
	KeptUntil   time.Time `json:"kept_until"`
	// Age is how long ago it was reclaimed, in whole seconds.
	Age string `json:"age"`
	// SizeBytes is the disk space it takes (-1 when it was not measured
	// or could not be).
	SizeBytes int64 `json:"size_bytes"`
	// Due says why it goes now (a Due* word), "" while it is kept.
	Due string `json:"due"`
	// HalfPurged: a purge of it began (its work salvaged) and did not
	// finish: the folder may be half deleted. A purge finishes it.
	HalfPurged bool `json:"half_purged"`
	// Missing: the kept trash folder is gone (moved or deleted by hand)
	// while no purge of it began; git's entry of it may remain. Its size
	// is then 0.
	Missing bool `json:"missing"`
	// SalvageRefs are the reclaim's (and an interrupted purge's)
	// salvages of it.
	SalvageRefs []string `json:"salvage_refs"`
	// recycling is the pooled worktree the interrupted purge was
	// recycling the folder into ("" when it was deleting it).
	recycling string
}

// A PurgedTrash is a kept trash folder a purge deleted, or left.
type PurgedTrash struct {
	Binding string `json:"binding"`
	Seq     int    `json:"seq"`
	Path    string `json:"path"`
	Due     string `json:"due"`
	// SalvageRef is the salvage of what changed in the trash since the
	// reclaim, when anything had; "" otherwise.
	SalvageRef string `json:"salvage_ref"`
	// Recycled names the pooled worktree the trash folder became (it was
	// cleaned and given to the warm pool instead of being deleted: pool.md,
	// "Recycling"); "" when it was deleted.
	Recycled string `json:"recycled"`
	// Reason is why it was left (PurgeResult.Left only).
	Reason string `json:"reason,omitempty"`
}

// A PurgeResult reports a purge of what is due.
type PurgeResult struct {
	Purged []PurgedTrash `json:"purged"`
	// Left lists what was due and was not purged, with why: its salvage
	// failed (then nothing of it was deleted), its binding was busy, it
	// is not the workspace any more.
	Left []PurgedTrash `json:"left"`
	// PoolDrained lists the ready pooled worktrees given back for space
	// before any kept trash went early (poolbudget.go).
	PoolDrained []PoolWorktree `json:"pool_drained"`
}

// keptTrashOf returns the kept trash of r, if r has one that is not
// purged: its reclaimed event kept the folder (trash_path, beside a moved
// event) or, for a workspace whose folder was gone, git's entry of it
// moved aside (admin_kept: entryaside.go), or a purge of it began.
func keptTrashOf(r *claimRecord) (ev *Event, ok bool) {
	ev = r.Events[EventReclaimed]
	if ev == nil || r.has(EventPurged) {
		return nil, false
	}
	folder := ev.TrashPath != "" && r.Events[EventMoved] != nil
	if !folder && ev.AdminKept == "" {
		return nil, false
	}
	if ev.KeepUntil == nil && !r.has(EventPurging) {
		return nil, false
	}
	return ev, true
}

// keptPath is where r's kept trash is: its trash folder, or (entry) git's
// entry of it kept aside.
func keptPath(r *claimRecord, ev *Event) (path string, entry bool) {
	if ev.AdminKept != "" {
		return ev.AdminKept, true
	}
	return r.Events[EventMoved].TrashPath, false
}

// KeptTrash lists every kept trash folder of the repository, oldest
// first, with its age and size, and marks those the policy says go now
// (Due): those whose time is up, those a purge began, then the oldest
// ones until the rest fits trash.max_bytes and the free space is above
// trash.min_free. It changes nothing.
func (p *Provider) KeptTrash(ctx context.Context) ([]KeptTrash, error) {
	tp, err := p.TrashPolicy()
	if err != nil {
		return nil, err
	}
	all, err := p.records.All()
	if err != nil {
		return nil, err
	}
	return p.keptTrash(all, tp, sizesMeasured), nil
}

// How keptTrash knows sizes: not at all, remembered only (trashsize.go;
// unknown is -1), or remembered else measured.
type sizeMode int

const (
	sizesNone sizeMode = iota
	sizesRemembered
	sizesMeasured
)

func (p *Provider) keptTrash(all [][]*claimRecord, tp TrashPolicy, mode sizeMode) []KeptTrash {
	return p.keptTrashLeaving(all, tp, mode, nil)
}

// keptTrashLeaving is keptTrash with the trash in stays counted as
// staying, whatever is due (markDue).
func (p *Provider) keptTrashLeaving(all [][]*claimRecord, tp TrashPolicy, mode sizeMode, stays map[string]bool) []KeptTrash {
	now := p.now()
	out := []KeptTrash{}
	var ts *trashSizes
	if mode != sizesNone {
		ts = p.loadTrashSizes()
		defer p.saveTrashSizes(ts)
	}
	for _, recs := range all {
		for _, r := range recs {
			ev, ok := keptTrashOf(r)
			if !ok {
				continue
			}
			path, entry := keptPath(r, ev)
			k := KeptTrash{Binding: r.Claim.Binding, Seq: r.Claim.Seq, Path: path, Entry: entry, Branch: ev.Branch,
				ReclaimedAt: ev.At.UTC(), Age: now.Sub(ev.At).Truncate(time.Second).String(), SizeBytes: -1,
				SalvageRefs: salvagesOf(r)}
			if ev.KeepUntil != nil {
				k.KeptUntil = ev.KeepUntil.UTC()
			}
			switch {
			case r.has(EventPurging):
				k.Due, k.HalfPurged, k.recycling = DueInterrupted, true, r.Events[EventPurging].Taker
			case !now.Before(k.KeptUntil):
				k.Due = DueExpired
			}
			if ts != nil {
				k.SizeBytes = p.cachedTrashSize(ts, k.Binding, k.Seq, k.Path, mode == sizesMeasured)
			}
			k.Missing = trashFolderGone(r, &k)
			out = append(out, k)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ReclaimedAt.Before(out[j].ReclaimedAt) })
	if mode == sizesNone {
		return out
	}
	markDue(out, tp, stays, p.poolSpaceOf(all, ts, mode), p.poolDirKey())
	return out
}

// trashSize measures a trash folder's disk space; a folder that is gone
// takes none.
func (p *Provider) trashSize(path string) (int64, error) {
	n, err := gitops.TreeSize(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	return n, err
}

// salvagesOf lists the salvage refs a claim's records name, in order.
func salvagesOf(r *claimRecord) []string {
	out := []string{}
	for _, kind := range []string{EventSalvaged, EventChecked, EventPurging, EventPurged} {
		if ev := r.Events[kind]; ev != nil && ev.SalvageRef != "" && (len(out) == 0 || out[len(out)-1] != ev.SalvageRef) {
			out = append(out, ev.SalvageRef)
		}
	}
	return out
}

// purgeNotStarted is a failure of a purge before it deleted anything.
type purgeNotStarted struct{ err error }

func (e *purgeNotStarted) Error() string { return e.err.Error() + "; nothing was deleted" }
func (e *purgeNotStarted) Unwrap() error { return e.err }

// errPurgeGone: the trash was purged or restored meanwhile.
var errPurgeGone = errors.New("already purged or restored")

// purgeKept purges the kept trash of binding's claim seq, under the
// binding's reservation (see the top of this file). due is why it goes.
func (p *Provider) purgeKept(ctx context.Context, binding string, seq int, due string) (_ *PurgedTrash, err error) {
	// Until the purging event is published, nothing is deleted: a
	// failure then says so.
	started := false
	defer func() {
		if err != nil && !started && !errors.Is(err, errPurgeGone) && !strings.Contains(err.Error(), "nothing was deleted") {
			err = &purgeNotStarted{err}
		}
	}()
	r, err := p.claimOf(binding, seq)
	if err != nil {
		return nil, err
	}
	if _, ok := keptTrashOf(r); !ok {
		return nil, errPurgeGone
	}
	path, entry := keptPath(r, r.Events[EventReclaimed])
	lease, err := p.reservePurge(ctx, r, path)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	ctx, cancel := lease.Context(ctx)
	defer cancel()
	// Read again under the reservation: a restore or another purge may
	// have finished meanwhile.
	if r, err = p.claimOf(binding, seq); err != nil {
		return nil, err
	}
	if _, ok := keptTrashOf(r); !ok {
		return nil, errPurgeGone
	}
	pt := &PurgedTrash{Binding: binding, Seq: seq, Path: path, Due: due}
	pool, fresh := "", false
	if ev := r.Events[EventPurging]; ev != nil {
		pt.Due, pt.SalvageRef, pool, started = ev.Reason, ev.SalvageRef, ev.Taker, true
	} else {
		if pool, err = p.purgeBegin(ctx, r, path, entry, pt, lease); err != nil {
			return pt, err
		}
		started, fresh = true, true
	}
	if err := p.inject(ctx, fpPurgeStarted); err != nil {
		return pt, err
	}
	if err := lease.Check(); err != nil {
		return pt, err
	}
	if pool != "" {
		err = p.purgeRecycled(ctx, r, pool, pt, fresh, lease)
	} else {
		err = p.purgeDelete(ctx, r, path, entry)
	}
	if err != nil {
		return pt, err
	}
	if _, err := p.records.Publish(r, Event{Kind: EventPurged, TrashPath: path, SalvageRef: pt.SalvageRef, Reason: pt.Due, Taker: pt.Recycled}); err != nil {
		return pt, err
	}
	p.log.Info("kept trash purged", "binding", binding, "path", path, "due", pt.Due, "salvage_ref", pt.SalvageRef, "recycled", pt.Recycled)
	return pt, lease.Release()
}

// purgeDelete deletes a kept trash: the folder (by descriptor, by
// identity), then git's entry of it; or git's entry kept aside, once it
// is found to be the claim's.
func (p *Provider) purgeDelete(ctx context.Context, r *claimRecord, path string, entry bool) error {
	if entry {
		if err := p.deleteKeptEntry(r, path); err != nil {
			return err
		}
		if err := p.inject(ctx, fpPurgeDeleted); err != nil {
			return err
		}
		return p.inject(ctx, fpPurgeDropped)
	}
	mv := r.Events[EventMoved]
	if err := p.deleteTrashFolder(r, mv); err != nil {
		return err
	}
	if err := p.inject(ctx, fpPurgeDeleted); err != nil {
		return err
	}
	if err := p.deleteTrash(r, mv); err != nil { // the folder is gone: git's entry
		return err
	}
	return p.inject(ctx, fpPurgeDropped)
}

// purgeSalvageEntry salvages again git's entry of a workspace whose
// folder was gone, kept aside (entryaside.go), when it is still there and
// the claim's: what someone added to it since (moved back and used).
func (p *Provider) purgeSalvageEntry(ctx context.Context, r *claimRecord, dir string) (string, error) {
	c := r.Claim
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if !ownEntry(r, dir) {
		return "", &Error{Op: "purge", Binding: c.Binding, Path: dir, Err: ErrIdentity,
			Reason: "the entry in majlis's trash is not the workspace's (neither its claim's pin nor majlis's lock of it); nothing was deleted",
			Hint:   "majlis will not delete it; inspect it"}
	}
	ref, err := p.salvageKeptEntry(ctx, r, dir)
	if err != nil {
		return "", &Error{Op: "purge", Binding: c.Binding, Path: dir, Err: ErrTrash,
			Reason: "salvaging git's entry kept aside failed: " + err.Error() + "; nothing was deleted",
			Hint:   "the entry is kept until this is fixed; the next purge tries again"}
	}
	return ref, nil
}

// deleteKeptEntry deletes git's entry kept aside, if it is still there,
// only when it is the claim's, by its identity as it is opened.
func (p *Provider) deleteKeptEntry(r *claimRecord, dir string) error {
	c := r.Claim
	id, err := pathid.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	want := durable.DirIdentity{Dev: id.Dev, Ino: id.Ino}
	if pg := r.Events[EventPurging]; pg != nil && pg.Ino != 0 {
		want = durable.DirIdentity{Dev: pg.Dev, Ino: pg.Ino} // recorded whole, before any deletion
	} else if !ownEntry(r, dir) {
		return &Error{Op: "purge", Binding: c.Binding, Path: dir, Err: ErrIdentity,
			Reason: "the entry in majlis's trash is not the workspace's", Hint: "majlis will not delete it; inspect it"}
	}
	if err := durable.DeleteTree(dir, want); err != nil {
		if errors.Is(err, durable.ErrNotSameDir) {
			return &Error{Op: "purge", Binding: c.Binding, Path: dir, Err: ErrIdentity,
				Reason: "another directory than the entry the purge began with is there: " + err.Error(), Hint: "majlis will not delete it; inspect it"}
		}
		return &Error{Op: "purge", Binding: c.Binding, Path: dir, Err: ErrTrash, Reason: "deleting git's entry kept aside: " + err.Error(),
			Hint: "it is salvaged; the next purge finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	return nil
}

// claimOf reads binding's claim seq.
func (p *Provider) claimOf(binding string, seq int) (*claimRecord, error) {
	recs, err := p.records.Binding(binding)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Claim.Seq == seq {
			return r, nil
		}
	}
	return nil, &Error{Op: "purge", Binding: binding, Err: ErrNotFound, Reason: fmt.Sprintf("no claim #%d", seq)}
}

// purgeSalvage checks that the kept trash folder of r is still the
// workspace, snapshots it, and stores the snapshot on a salvage ref when
// it holds anything the reclaim's last salvage does not. It returns that
// ref, or "". A folder that is gone leaves git's entry of it to salvage
// (purgegone.go). Any failure
// is returned: the purge then deletes nothing.
func (p *Provider) purgeSalvage(ctx context.Context, r *claimRecord) (string, error) {
	c, mv := r.Claim, r.Events[EventMoved]
	fail := func(why string, err error) error {
		return &Error{Op: "purge", Binding: c.Binding, Path: mv.TrashPath, Err: ErrTrash,
			Reason: why + ": " + err.Error() + "; nothing was deleted",
			Hint:   "the trash folder is kept until this is fixed; the next purge tries again"}
	}
	if _, err := pathid.Lstat(mv.TrashPath); errors.Is(err, os.ErrNotExist) {
		return p.purgeSalvageGone(ctx, r, mv)
	}
	if repointed, err := p.verifyMoved(r, mv); err != nil || !repointed {
		if errors.Is(err, ErrLocked) {
			return "", trashLockedError("purge", r, mv.TrashPath, err)
		}
		if err == nil {
			err = errors.New("git's entry does not point at the trash folder")
		}
		return "", &Error{Op: "purge", Binding: c.Binding, Path: mv.TrashPath, Err: ErrIdentity,
			Reason: "the trash folder is not the workspace as the reclaim left it: " + err.Error() + "; nothing was deleted",
			Hint:   "inspect it: majlis will not delete it"}
	}
	if err := p.purgePeers(ctx, r, mv.TrashPath); err != nil {
		return "", err
	}
	var from gitops.HeadState
	if ev := r.Events[EventReclaimed]; ev != nil && ev.Branch != "" {
		from = gitops.HeadState{Branch: ev.Branch, Commit: ev.Head}
	}
	msg := fmt.Sprintf("majlis purge of the kept trash of workspace %s: what it held before it was deleted\n\nMajlis-Binding: %s\nMajlis-Claim: %s\nMajlis-Path: %s\nMajlis-Trash: %s\n",
		c.Binding, c.Binding, r.Digest, c.Path, mv.TrashPath)
	snap, err := salvage.SnapshotKept(ctx, mv.TrashPath, msg, from)
	if err != nil {
		return "", fail("snapshotting the trash folder failed", err)
	}
	if err := p.purgeKeepSubmodules(ctx, r, mv.TrashPath, snap.DirtySubmodules); err != nil {
		return "", err
	}
	refs := salvagesOf(r)
	last := ""
	if len(refs) > 0 {
		last = refs[len(refs)-1]
	}
	holds, what, err := salvage.Holds(ctx, c.CommonDir, last, snap)
	if err != nil {
		return "", fail("comparing the trash folder with its last salvage failed", err)
	}
	if holds {
		return "", nil
	}
	ref, err := p.storeSalvage(ctx, c.Binding, snap.Commit)
	if err != nil {
		return "", fail("storing the salvage failed", err)
	}
	p.log.Info("the kept trash changed since its last salvage; salvaged", "binding", c.Binding, "changed", what, "salvage_ref", ref)
	return ref, nil
}

// deleteTrashFolder deletes a kept trash folder, if it is still there,
// by file descriptor and only if it is the directory allocated.
func (p *Provider) deleteTrashFolder(r *claimRecord, mv *Event) error {
	c := r.Claim
	if err := durable.DeleteTree(mv.TrashPath, createdIdentity(r)); err != nil {
		if errors.Is(err, durable.ErrNotSameDir) {
			return driftError(r, mv, err.Error())
		}
		code := ErrTrash
		if errors.Is(err, durable.ErrCrossDevice) {
			code = ErrCrossDevice
		}
		return &Error{Op: "purge", Binding: c.Binding, Path: mv.TrashPath, Err: code, Reason: "deleting the trash folder: " + err.Error(),
			Hint: "its work is salvaged; the next purge finishes the deletion", Details: map[string]any{"resumable": true}}
	}
	return nil
}
