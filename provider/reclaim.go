package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

var (
	fpReclaimReserved = failpoint.New("reclaim/reserved")
	fpReclaimSalvaged = failpoint.New("reclaim/salvaged")
	// reclaim/removed: the trash deleted (or kept), the claim not yet
	// retired. The steps between are in trash.go.
	fpReclaimRemoved = failpoint.New("reclaim/removed")
	// reclaim/recorded: the reclaimed event published, the result not yet
	// recorded under the request id nor the reservation released
	// (reclaimretry.go finishes it).
	fpReclaimRecorded = failpoint.New("reclaim/recorded")
	// reclaim/answered: the result recorded under the request id, the
	// reservation not yet released (a retry, or an allocation in its
	// way, retires it: retireDoneReservation).
	fpReclaimAnswered = failpoint.New("reclaim/answered")
)

// ReclaimOptions describe a reclaim.
type ReclaimOptions struct {
	Binding           string
	Confirm           string // the digest of the preview the user saw
	Yes               bool   // proceed without comparing digests (the checks still run)
	SalvageSubmodules bool   // salvage dirty submodules too, instead of refusing
	RequestID         string
	// KeepTrash, when positive, keeps the moved workspace in its trash
	// folder for this long (the undo window: restore --from-trash puts it
	// back) instead of the policy's trash.keep; zero means the policy's.
	// A purge deletes it afterwards (purge.go). DeleteTrash deletes it at
	// once instead, whatever the policy says (--keep-trash 0).
	KeepTrash   time.Duration
	DeleteTrash bool
	// requireKeep (end --reclaim of a workspace with ignored files)
	// refuses, before anything is done, a reclaim whose trash would not
	// be kept.
	requireKeep bool
}

// ReclaimResult is wire.ReclaimResult: the result type is defined once, in the wire contract.
type ReclaimResult = wire.ReclaimResult

// authority establishes that the target may be reclaimed at all: no live
// owner, the directory is the one allocated, it is a linked worktree of
// the claimed repository whose admin entry is the one allocated and not
// locked by anyone else, and git run in it acts on it (see adminentry.go).
// It returns the verified admin entry.
func (p *Provider) authority(ctx context.Context, rec *claimRecord) (*adminEntry, error) {
	c := rec.Claim
	// Releasing hands the workspace back: its owner process stops counting.
	if c.OwnerPID != 0 && !rec.has(EventReleased) {
		self, err := procid.Of(os.Getpid())
		if err != nil {
			return nil, err
		}
		owner := self
		owner.PID, owner.StartTime = c.OwnerPID, c.OwnerStart
		if live, why := procid.Judge(owner); live != procid.Dead {
			return nil, p.ownerLiveError(ctx, rec, fmt.Sprintf("its owner process %d is %s: %s", c.OwnerPID, live, why))
		}
	}
	if err := p.leaseLiveness(ctx, rec); err != nil {
		return nil, err
	}
	return p.verifyWorkspace(ctx, "reclaim", rec)
}

// verifyWorkspace runs the checks of the workspace itself (not of its
// owner or leases): directory identity, repository, admin entry, git's
// view. They read files in process but for one git process.
func (p *Provider) verifyWorkspace(ctx context.Context, op string, rec *claimRecord) (*adminEntry, error) {
	if err := p.verifyIdentity(op, rec); err != nil {
		return nil, err
	}
	dir, err := verifyRepository(op, rec)
	if err != nil {
		return nil, err
	}
	entry, err := verifyAdminEntry(op, rec, dir, false)
	if err != nil {
		return nil, err
	}
	if err := verifyGitView(ctx, op, rec); err != nil {
		return nil, err
	}
	return entry, nil
}

// verifyRepository checks that the target's .git file points into the
// claimed common dir, and that git's record there points back. It returns
// that record's directory, the worktree's admin entry.
func verifyRepository(op string, rec *claimRecord) (string, error) {
	c := rec.Claim
	fail := func(reason string) (string, error) {
		return "", &Error{Op: op, Binding: c.Binding, Path: filepath.Join(c.Path, ".git"), Err: ErrRepository,
			Reason: reason, Hint: "majlis will not touch it; inspect the directory"}
	}
	dotgit := filepath.Join(c.Path, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || !fi.Mode().IsRegular() {
		return fail("it has no .git file: it is not a linked worktree")
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return fail(err.Error())
	}
	gitdir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "gitdir: ")
	if !ok {
		return fail("its .git file is not a gitdir link")
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(c.Path, gitdir)
	}
	worktrees := filepath.Join(c.CommonDir, "worktrees")
	if filepath.Dir(filepath.Clean(gitdir)) != worktrees {
		return fail(fmt.Sprintf("its .git file points to %s, outside %s", gitdir, worktrees))
	}
	back, err := os.ReadFile(filepath.Join(gitdir, "gitdir"))
	if err != nil {
		return fail("the repository has no record of it: " + err.Error())
	}
	backPath := strings.TrimRight(string(back), "\n")
	same, _ := pathid.Compare(backPath, dotgit)
	if same.Relation != pathid.Equal {
		return fail(fmt.Sprintf("the repository's record %s points to %s, not here", gitdir, backPath))
	}
	return filepath.Clean(gitdir), nil
}

// Reclaim salvages, cleans and removes the binding's workspace, under a
// reclaim reservation, re-checking the reservation, the claim, the
// target's identity and every retained peer immediately before each
// destructive effect.
func (p *Provider) Reclaim(ctx context.Context, o ReclaimOptions) (*ReclaimResult, error) {
	if err := ValidBinding(o.Binding); err != nil {
		return nil, err
	}
	if o.Confirm != "" {
		if err := CheckDigest(o.Confirm); err != nil {
			return nil, err
		}
	}
	args := requestArgs{Op: "reclaim", Binding: o.Binding}
	if res, done, err := replay[ReclaimResult](p.records, o.RequestID, args); done || err != nil {
		if res != nil {
			reclaimArrays(res) // recorded before a field existed
			// Killed after it answered, before it let go: its dead
			// owner's reservation protects nothing any more.
			p.retireDoneReservation(ctx, reclaimPrefix+o.Binding)
		}
		return res, err
	}
	if o.RequestID != "" {
		// Stopped after it recorded its end, before its result? Then the
		// binding may even have a new workspace since, which is not this
		// request's to touch.
		if res, found, err := p.finishRecorded(ctx, o, args); found {
			return res, err
		}
	}
	rec, err := p.records.Current("reclaim", o.Binding)
	if err != nil {
		return nil, err
	}
	rec = p.asGitSees(ctx, rec)
	if !o.Yes && o.Confirm == "" {
		return nil, &Error{Op: "reclaim", Binding: o.Binding, Err: ErrUnconfirmed,
			Hint: "preview the reclaim, then confirm its digest"}
	}
	// How long the trash is kept is settled before anything is done.
	if o.KeepTrash, err = p.keepFor(o); err != nil {
		return nil, err
	}
	if rec.has(EventMoved) {
		// An interrupted reclaim moved (or was about to move) the
		// workspace into its trash folder: finish from there.
		if res, handled, err := p.reclaimMoved(ctx, rec, o, args); handled {
			return res, err
		}
	}
	entry, err := p.authority(ctx, rec)
	if err != nil {
		if errors.Is(err, ErrMissing) {
			return p.reclaimMissing(ctx, rec, o, args, err)
		}
		return nil, err
	}
	lease, err := p.reserve(ctx, rec, o.RequestID)
	if err != nil {
		return nil, err
	}
	// A refusal or failure ends the reclaim: release the reservation so a
	// retry need not wait for it to expire. (A crash leaves it held; a
	// retry recovers it once it has expired and this process is proven
	// dead.)
	defer lease.Release()
	// The work runs under the reservation's context: should the
	// reservation be lost, what is under way stops, and recheck refuses
	// every later step.
	work, cancel := lease.Context(ctx)
	defer cancel()
	res, err := p.reclaimHeld(work, rec, entry, lease, o)
	if err != nil {
		return nil, p.lostOr(o.Binding, lease, err)
	}
	if o.RequestID != "" {
		if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
			return nil, err
		}
	}
	if err := p.inject(ctx, fpReclaimAnswered); err != nil {
		return nil, err
	}
	if err := lease.Release(); err != nil {
		return nil, err
	}
	p.forgetPreviews(o.Binding)
	p.log.Info("workspace reclaimed", "binding", o.Binding, "path", res.Path, "steps", res.StepsDone, "salvage_refs", res.SalvageRefs)
	return res, nil
}

// reclaimHeld is the reclaim under its reservation, until the workspace
// is gone and the claim retired.
func (p *Provider) reclaimHeld(ctx context.Context, rec *claimRecord, entry *adminEntry, lease *reservation.Session, o ReclaimOptions) (*ReclaimResult, error) {
	// The leases again, now that the reservation stands: an admission
	// that did not see it had committed before this reads (liveness.go).
	if err := p.leaseLiveness(ctx, rec); err != nil {
		return nil, err
	}
	if err := p.inject(ctx, fpReclaimReserved); err != nil {
		return nil, err
	}
	return p.reclaimReserved(ctx, rec, entry, lease, o)
}

func (p *Provider) reclaimReserved(ctx context.Context, rec *claimRecord, entry *adminEntry, lease *reservation.Session, o ReclaimOptions) (*ReclaimResult, error) {
	c := rec.Claim
	pv, err := p.previewWith(ctx, rec, entry, true)
	if err != nil {
		return nil, err
	}
	if err := firstOverlap(c.Binding, c.Path, pv.Peers); err != nil {
		return nil, err
	}
	if !o.Yes && pv.Digest != o.Confirm {
		return nil, p.staleError(o.Confirm, pv)
	}
	res := &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{},
		IgnoredFiles: pv.IgnoredFiles, SpecialFiles: pv.SpecialFiles}
	reclaimArrays(res)
	if len(pv.Salvage.DirtySubmodules) > 0 && !o.SalvageSubmodules {
		return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Err: ErrDirtySubmodule,
			Reason: "dirty submodules: " + strings.Join(pv.Salvage.DirtySubmodules, ", "),
			Hint:   "commit their changes, or have the reclaim salvage them too"}
	}
	if err := checkMovable(rec); err != nil {
		return nil, err
	}
	if in := trashInside(c.Path, c.PhysicalPath, pv.Peers); in != "" && o.KeepTrash > 0 {
		if o.requireKeep {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: c.Path, Peer: in, Err: ErrUnconfirmed,
				Reason: "its trash folder would lie inside " + in + ", so it would not be kept, and what salvage does not keep (ignored files) would be deleted"}
		}
		o.KeepTrash = 0
		res.TrashNotKept = "its trash folder would lie inside " + in + ", whose reclaim a kept trash would block"
	}
	if o.KeepTrash > 0 && pv.TrashGoesAtOnce != "" {
		// Kept, the purge that follows would delete it at once: the
		// result must not promise it, and files salvage does not keep go
		// only with the consent of a confirmed preview that said so.
		if pv.IgnoredFiles+pv.SpecialFiles > 0 && (o.requireKeep || o.Confirm != pv.Digest) {
			return nil, trashAtOnceError("reclaim", pv)
		}
		o.KeepTrash = 0
		res.TrashNotKept = "the policy would purge it at once: " + pv.TrashGoesAtOnce
	}
	// A workspace allocated before majlis pinned admin entries is pinned
	// now, before any step: the checks that follow then require the pin,
	// so the entry cannot be swapped for another one meanwhile.
	if !entry.pinned {
		if _, err := verifyAdminEntry("reclaim", rec, entry.dir, false); err != nil {
			return nil, err
		}
		if err := gitops.WriteEntryPin(entry.dir, rec.Digest); err != nil {
			return nil, &Error{Op: "reclaim", Binding: c.Binding, Path: entry.dir, Err: ErrIdentity,
				Reason: "pinning git's entry of the workspace: " + err.Error(), Hint: "inspect it"}
		}
		res.PinnedOnFirstContact = true
	}

	// Salvage first; nothing is destroyed if it fails. Checked-out
	// submodules keep their work and their commits in this worktree's own
	// git directory, which removal deletes: copy them into the repository.
	kept, err := p.keepSubmodules(ctx, rec, pv.Salvage.DirtySubmodules, o.SalvageSubmodules)
	if err != nil {
		return nil, err
	}
	res.Submodules = nonNil(kept)
	if !pv.Salvage.Clean {
		// A retry after an interruption salvages again whatever is there
		// now; the first salvage (recorded in the salvaged event) holds the
		// state before any destructive step and stays the reclaim's ref.
		p.progress(Progress{Op: "reclaim", Binding: c.Binding, Step: fmt.Sprintf("salvaging %s", nounCount(pv.Salvage.Files, "changed file", "changed files"))})
		s, err := p.salvage(ctx, rec, "majlis reclaim of workspace "+c.Binding)
		if err != nil {
			return nil, err
		}
		if s.Ref != nil {
			res.SalvageRefs = append(res.SalvageRefs, *s.Ref)
			res.StepsDone = append(res.StepsDone, "salvage")
			if _, err := p.records.Publish(rec, Event{Kind: EventSalvaged, SalvageRef: *s.Ref, RequestID: o.RequestID}); err != nil {
				return nil, err
			}
		}
	}
	if err := p.inject(ctx, fpReclaimSalvaged); err != nil {
		return nil, err
	}

	// The leases of a dead owner are retired before the first
	// destructive step: a crash after it finds none to retire.
	if err := p.recoverLeases(ctx, rec, res); err != nil {
		return nil, err
	}

	// From here on nothing runs on the workspace's path: it is moved
	// aside, verified and salvaged again there, then deleted (trash.go).
	p.progress(Progress{Op: "reclaim", Binding: c.Binding, Step: fmt.Sprintf("moving aside, then deleting (%s not salvaged)", notSalvagedShort(pv.IgnoredFiles, pv.SpecialFiles))})
	return p.moveAside(ctx, rec, entry, lease, o, res)
}

// reclaimMissing retires the claim of a workspace whose directory is gone.
// If git still lists a worktree entry for it, the entry is unregistered
// (`git worktree remove` of a missing directory deletes only git's
// administrative files). Under the reservation it re-checks that the
// directory is still absent and the claim unchanged. It deletes nothing on
// disk.
func (p *Provider) reclaimMissing(ctx context.Context, rec *claimRecord, o ReclaimOptions, args requestArgs, missing error) (_ *ReclaimResult, err error) {
	c := rec.Claim
	pv, listed, err := p.missingPreview(ctx, rec, missing)
	if err != nil {
		return nil, err
	}
	if !o.Yes && o.Confirm != pv.Digest {
		return nil, p.staleError(o.Confirm, pv)
	}
	lease, err := p.reserve(ctx, rec, o.RequestID)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	ctx, cancel := lease.Context(ctx)
	defer cancel()
	defer func() { err = p.lostOr(c.Binding, lease, err) }()
	recheck := func() (bool, error) {
		if err := lease.Check(); err != nil {
			return false, err
		}
		if now, err := p.records.Current("reclaim", c.Binding); err != nil {
			return false, err
		} else if now.Digest != rec.Digest {
			return false, &Error{Op: "reclaim", Binding: c.Binding, Err: ErrIdentity,
				Reason: "the binding's claim changed during the reclaim"}
		}
		_, listed, err := p.missingPreview(ctx, rec, missing)
		return listed, err
	}
	res := &ReclaimResult{Binding: c.Binding, Path: c.Path, Branch: c.Branch, StepsDone: []string{}, SalvageRefs: []string{}, Removed: true}
	reclaimArrays(res)
	if listed, err = recheck(); err != nil {
		return nil, err
	}
	if err := p.recoverLeases(ctx, rec, res); err != nil {
		return nil, err
	}
	if listed {
		// Salvaged, then moved aside (entryaside.go).
		if err := p.forgetEntry(ctx, rec, pv.AdminEntry.Path, o, res, recheck); err != nil {
			return nil, err
		}
		reclaimArrays(res) // no submodules: still an array
	}
	reclaimed := Event{Kind: EventReclaimed, RequestID: o.RequestID}
	if err := p.keepOrDropEntry(rec, o, &reclaimed, res); err != nil {
		return nil, err
	}
	if ev := rec.Events[EventSalvaged]; ev != nil {
		ref := ev.SalvageRef // the first salvage, perhaps by an interrupted run
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
	if o.RequestID != "" {
		if err := p.records.RecordRequest(o.RequestID, args, res); err != nil {
			return nil, err
		}
	}
	if err := p.inject(ctx, fpReclaimAnswered); err != nil {
		return nil, err
	}
	if err := lease.Release(); err != nil {
		return nil, err
	}
	p.forgetPreviews(o.Binding)
	return res, nil
}

// recheck runs immediately before every destructive effect: the
// reservation is still ours, the claim is unchanged, the target is the
// same directory of the same repository, and no retained peer overlaps.
func (p *Provider) recheck(ctx context.Context, rec *claimRecord, lease *reservation.Session) error {
	if err := lease.Check(); err != nil {
		return err
	}
	now, err := p.records.Current("reclaim", rec.Claim.Binding)
	if err != nil {
		return err
	}
	if now.Digest != rec.Digest {
		return &Error{Op: "reclaim", Binding: rec.Claim.Binding, Err: ErrIdentity,
			Reason: "the binding's claim changed during the reclaim"}
	}
	if now = p.asGitSees(ctx, now); now.Claim.Path != rec.Claim.Path {
		return &Error{Op: "reclaim", Binding: rec.Claim.Binding, Path: rec.Claim.Path, Err: ErrIdentity,
			Reason: "the workspace's path now leads to " + now.Claim.Path + " (a symbolic link among its parents changed during the reclaim)",
			Hint:   "majlis will not act on it; inspect the path"}
	}
	entry, err := p.verifyWorkspace(ctx, "reclaim", now)
	if err != nil {
		return err
	}
	if !entry.pinned {
		return &Error{Op: "reclaim", Binding: rec.Claim.Binding, Path: rec.Claim.Path, Err: ErrIdentity,
			Reason: "git's entry of the workspace (" + entry.dir + ") lost majlis's pin during the reclaim",
			Hint:   "majlis will not act on it; inspect the worktree"}
	}
	if err := p.leaseLiveness(ctx, now); err != nil {
		return err
	}
	peers, err := p.retainedPeers(ctx, now)
	if err != nil {
		return err
	}
	return firstOverlap(rec.Claim.Binding, rec.Claim.Path, peers)
}
