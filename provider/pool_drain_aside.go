package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/openers"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

// Deleting one pooled worktree (pool drain). git's `worktree remove`
// deletes ignored files without looking, and anything checked before it
// can change before it runs; so a drain first takes the folder out of
// reach, then looks at it where nobody else can write, then deletes it:
//
//  1. under the pooled binding's reservation (one drain at a time), a
//     ready one is taken with the drain's own taken event, the slot a
//     hand-out takes it with: exactly one of them gets it;
//  2. the draining event names where the folder goes (drainAsidePath),
//     git's entry and the folder's identity, before anything moves;
//  3. the folder is renamed there, never replacing anything (a writer by
//     path finds it gone);
//  4. no process may use it (a working directory, an open or mapped file
//     inside: internal/openers);
//  5. there, it must be the worktree majlis made, clean, with no
//     untracked nor ignored file and no hard link (checkPooledAt);
//  6. it is deleted by identity (durable.DeleteTree), then git's entry
//     found by its pin, then the claim retires (reclaimed, "drained").
//
// Anything that fails in 4 or 5 puts the folder back at its pool path
// (or leaves it aside when that is taken) and sets it aside: the next
// drain tries again. After a crash the folder is at its pool path, at its
// aside path, or gone with git's entry or the claim left: the next drain
// (or doctor, which names it) finishes from whichever it finds.

var (
	fpPoolDrainMoved   = failpoint.New("pool/drain-moved")   // moved aside, not yet checked
	fpPoolDrainDeleted = failpoint.New("pool/drain-deleted") // the folder deleted, git's entry not yet
	fpPoolDrainDropped = failpoint.New("pool/drain-dropped") // git's entry deleted, the claim not yet retired
)

// drainAsideSuffix ends the name of a pooled worktree's folder moved
// aside by a drain: <workspace root>/.majlis-pool-<id>.draining, beside
// its pool path (same file system, same depth), a name only majlis uses.
const drainAsideSuffix = ".draining"

func drainAsidePath(c *Claim) string { return c.Path + drainAsideSuffix }

// drainTook reports whether r's taken event is a drain's (its taker is
// the pooled worktree itself), not an allocation's.
func drainTook(r *claimRecord) bool {
	ev := r.Events[EventTaken]
	return ev != nil && ev.Taker == r.Claim.Binding
}

// drainedWhere says where the folder of a pooled worktree a drain began
// on is: aside true when it is at the drain's aside path (at), false
// when it is at its pool path, gone, or no drain began.
func drainedWhere(r *claimRecord) (at string, aside bool) {
	dr := r.Events[EventDraining]
	if dr == nil {
		return "", false
	}
	id, err := pathid.Lstat(dr.TrashPath)
	return dr.TrashPath, err == nil && id.Dev == dr.Dev && id.Ino == dr.Ino
}

// errDrainLeft is why a drain left a pooled worktree (it is not an error
// of the drain, which goes on with the others).
type errDrainLeft struct{ why string }

func (e *errDrainLeft) Error() string { return e.why }

func drainLeft(format string, a ...any) error { return &errDrainLeft{why: fmt.Sprintf(format, a...)} }

// drainOne deletes the pooled worktree of r, under its reservation (see
// the top of this file). An *errDrainLeft says why it was left.
func (p *Provider) drainOne(ctx context.Context, r *claimRecord) error {
	lease, err := p.reserveAt(ctx, r, "", "drain", r.Claim.Path, r.Claim.PhysicalPath)
	if errors.Is(err, reservation.ErrHeld) {
		// A drain that died holds it: nothing of a drain outlives it but
		// a git status, and the openers check sees a process still in it.
		if _, rerr := p.leases.RecoverDead(ctx, reclaimPrefix+r.Claim.Binding); rerr == nil {
			lease, err = p.reserveAt(ctx, r, "", "drain", r.Claim.Path, r.Claim.PhysicalPath)
		}
	}
	if errors.Is(err, reservation.ErrHeld) {
		return drainLeft("another drain is deleting it")
	}
	if err != nil {
		return err
	}
	defer lease.Release()
	ctx, cancel := lease.Context(ctx)
	defer cancel()
	if r, err = p.claimOf(r.Claim.Binding, r.Claim.Seq); err != nil { // read again under the reservation
		return err
	}
	c := r.Claim
	switch poolState(r) {
	case "":
		if ev := r.Events[EventHanded]; ev != nil {
			return drainLeft("an allocation of %s took it", ev.Taker)
		}
		return nil // drained meanwhile
	case wire.PoolReady:
		id := "drain-" + newID()[:16]
		ev, err := p.records.Publish(r, Event{Kind: EventTaken, Taker: c.Binding, RequestID: id})
		if err != nil {
			return err
		}
		if ev.Taker != c.Binding {
			return drainLeft("an allocation of %s took it", ev.Taker)
		}
	case wire.PoolTaken:
		if !p.takenAbandoned(r) {
			return drainLeft("an allocation of %s took it", r.Events[EventTaken].Taker)
		}
	}
	dr := r.Events[EventDraining]
	if dr == nil {
		if gone, err := p.poolGone(r); err != nil || gone {
			return err
		}
		if dr, err = p.beginDrain(r); err != nil {
			return err
		}
	}
	if err := p.inject(ctx, fpPoolDrain); err != nil {
		return err
	}
	// From here on a stop (Ctrl-C) waits for the worktree's end: moved
	// back, or deleted (a git status and the deletion).
	ctx = context.WithoutCancel(ctx)
	if err := p.drainAside(ctx, r, dr); err != nil {
		return err
	}
	if err := lease.Check(); err != nil {
		return p.putBack(r, dr, "the drain lost its reservation: "+err.Error())
	}
	return p.finishDrain(ctx, r, dr)
}

// takenAbandoned reports whether the allocation that took r failed, or
// made its workspace otherwise (a drain may delete it then).
func (p *Provider) takenAbandoned(r *claimRecord) bool {
	takers, err := p.records.Binding(r.Events[EventTaken].Taker)
	return err == nil && takenOutcome(r, takers) == takenAbandoned
}

// beginDrain checks, at its pool path, that the folder is the pooled
// worktree's (identity, git's entry, pin), then publishes the draining
// event naming where it goes. A folder that fails is set aside and left.
func (p *Provider) beginDrain(r *claimRecord) (*Event, error) {
	c := r.Claim
	if err := poolIdentityAt(r, c.Path); err != nil {
		return nil, p.leaveDrain(r, err.Error())
	}
	entry, err := poolEntryAt(r, poolCheck{dir: c.Path})
	if err != nil {
		return nil, p.leaveDrain(r, err.Error())
	}
	if pin, err := gitops.ReadEntryPin(entry); err == nil && pin != r.Digest {
		return nil, p.leaveDrain(r, "git's entry of it is pinned by another claim ("+shortDigest(pin)+")")
	}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return nil, err
	}
	return p.records.Publish(r, Event{Kind: EventDraining, TrashPath: drainAsidePath(&c), AdminEntry: entry,
		Dev: id.Dev, Ino: id.Ino, RequestID: "drain-" + newID()[:16]})
}

// leaveDrain sets the pooled worktree aside (unless it is already) with
// why, and says it was left.
func (p *Provider) leaveDrain(r *claimRecord, why string) error {
	if !r.has(EventAside) {
		if _, err := p.records.Publish(r, Event{Kind: EventAside, Reason: why}); err != nil {
			return err
		}
	}
	return drainLeft("%s", why)
}

// drainAside moves the folder to its aside path (unless it is there),
// and checks it there: no process uses it, and it is the pooled worktree
// majlis made, clean. A failure puts it back at its pool path.
func (p *Provider) drainAside(ctx context.Context, r *claimRecord, dr *Event) error {
	c := r.Claim
	want := durable.DirIdentity{Dev: dr.Dev, Ino: dr.Ino}
	atPool, atAside := sameDirAt(c.Path, want), sameDirAt(dr.TrashPath, want)
	switch {
	case atAside:
	case atPool:
		if err := durable.MoveDir(c.Path, dr.TrashPath); err != nil {
			return p.leaveDrain(r, "it could not be moved aside to "+dr.TrashPath+": "+err.Error())
		}
		if err := p.inject(ctx, fpPoolDrainMoved); err != nil {
			return err
		}
	default:
		if _, err := os.Lstat(c.Path); err == nil {
			return p.leaveDrain(r, "its folder "+c.Path+" is not the one majlis made (another directory is there)")
		}
		if _, err := os.Lstat(dr.TrashPath); err == nil {
			return drainLeft("another directory than the pooled worktree is at %s, where a drain moves it: majlis leaves both", dr.TrashPath)
		}
		return nil // deleted by an interrupted drain: git's entry and the claim remain
	}
	physical := filepath.Join(filepath.Dir(c.PhysicalPath), filepath.Base(dr.TrashPath))
	users, err := openers.Scan([]string{physical})
	if err != nil {
		return p.putBack(r, dr, "majlis cannot tell which processes use it: "+err.Error())
	}
	if procs := users[physical]; len(procs) > 0 {
		return p.putBack(r, dr, "a process uses it: "+describeProcesses(procs))
	}
	_, _, err = p.checkPooledAt(ctx, r, poolCheck{dir: dr.TrashPath, entry: dr.AdminEntry, heads: p.switchedTo(r)})
	var pc *errPoolCheck
	if errors.As(err, &pc) {
		return p.putBack(r, dr, pc.why)
	}
	return err
}

// sameDirAt reports whether the directory at path has identity id.
func sameDirAt(path string, id durable.DirIdentity) bool {
	got, err := pathid.Lstat(path)
	return err == nil && got.Dev == id.Dev && got.Ino == id.Ino
}

// putBack moves a pooled worktree that failed a check aside back to its
// pool path (never replacing anything there), sets it aside with why,
// and says it was left, and where.
func (p *Provider) putBack(r *claimRecord, dr *Event, why string) error {
	c := r.Claim
	if err := durable.MoveDir(dr.TrashPath, c.Path); err != nil {
		why += "; it stays at " + dr.TrashPath + " (it could not be moved back to " + c.Path + ": " + err.Error() + ")"
	}
	return p.leaveDrain(r, why)
}

// switchedTo returns the base the allocation that took r had switched
// it to, when one did: a worktree clean at that commit holds nothing of
// anyone's either (majlis switched it, and the allocation failed).
func (p *Provider) switchedTo(r *claimRecord) []string {
	ev := r.Events[EventTaken]
	if ev == nil || drainTook(r) {
		return nil
	}
	if ev.Head != "" {
		return []string{ev.Head}
	}
	takers, err := p.records.Binding(ev.Taker)
	if err != nil {
		return nil
	}
	for _, t := range takers {
		if t.Claim.RequestID == ev.RequestID {
			return []string{t.Claim.Base}
		}
	}
	return nil
}

// finishDrain deletes the folder at its aside path (by identity), then
// git's entry of it (by its pin), then retires the claim.
func (p *Provider) finishDrain(ctx context.Context, r *claimRecord, dr *Event) error {
	c := r.Claim
	if err := durable.DeleteTree(dr.TrashPath, durable.DirIdentity{Dev: dr.Dev, Ino: dr.Ino}); err != nil {
		if errors.Is(err, durable.ErrNotSameDir) {
			return drainLeft("another directory than the pooled worktree is at %s: majlis leaves it", dr.TrashPath)
		}
		return fmt.Errorf("deleting it at %s (verified clean; the next drain finishes): %w", dr.TrashPath, err)
	}
	if err := p.inject(ctx, fpPoolDrainDeleted); err != nil {
		return err
	}
	if err := p.dropPooledEntry(r, dr); err != nil {
		return err
	}
	if err := p.inject(ctx, fpPoolDrainDropped); err != nil {
		return err
	}
	if _, err := os.Lstat(c.Path); err == nil {
		return drainLeft("a directory is at %s again: majlis leaves it", c.Path)
	}
	return p.drained(r)
}

// dropPooledEntry deletes git's entry of a pooled worktree whose folder
// is gone: every entry pinned with its claim whose worktree is gone and
// which no one but majlis locked, moved aside first then deleted
// (gitops.DropWorktreeEntry), or finishes an interrupted drop.
func (p *Provider) dropPooledEntry(r *claimRecord, dr *Event) error {
	c := r.Claim
	aside := p.adminAside(&c)
	pinned, err := gitops.EntriesPinnedWith(c.CommonDir, r.Digest)
	if err != nil {
		return err
	}
	if len(pinned) == 0 && dr != nil && unpinnedOwn(r, dr.AdminEntry) {
		// a fill that died before it pinned the entry
		pinned = append(pinned, gitops.PinnedEntry{Dir: dr.AdminEntry})
	}
	for _, e := range pinned {
		for _, at := range []string{e.WorkTree, c.Path, drainAsidePath(&c)} {
			if _, err := os.Lstat(at); at != "" && err == nil {
				return drainLeft("git's entry of it names %s, which exists: majlis leaves both", at)
			}
		}
		if lock, err := gitops.ReadWorktreeLock(e.Dir); err != nil {
			return err
		} else if lock.Locked && !ownLock(r, lock.Reason) {
			return drainLeft("git's entry of it %s has the lock reason %q, not majlis's", e.Dir, lock.Reason)
		}
		if err := os.MkdirAll(filepath.Dir(aside), 0o700); err != nil {
			return err
		}
		if err := gitops.DropWorktreeEntry(e.Dir, aside); err != nil {
			return err
		}
	}
	// A drop interrupted after it moved the entry aside: finish it.
	id, err := pathid.Lstat(aside)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return durable.DeleteTree(aside, durable.DirIdentity{Dev: id.Dev, Ino: id.Ino})
}

// unpinnedOwn reports whether git's entry dir, recorded by the draining
// event, is the pooled worktree's though it carries no pin: one a fill
// made and died before pinning (no created event), locked by majlis for
// this claim, naming the pool path.
func unpinnedOwn(r *claimRecord, dir string) bool {
	if r.has(EventCreated) {
		return false
	}
	if _, err := gitops.ReadEntryPin(dir); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	lock, err := gitops.ReadWorktreeLock(dir)
	back, berr := os.ReadFile(filepath.Join(dir, "gitdir"))
	return err == nil && berr == nil && lock.Locked && ownLock(r, lock.Reason) &&
		strings.TrimRight(string(back), "\n") == filepath.Join(r.Claim.Path, ".git")
}

// leftReason is what a drain reports of a pooled worktree it left for
// err, in the user's words.
func leftReason(err error) string {
	var dl *errDrainLeft
	if errors.As(err, &dl) {
		return dl.why
	}
	var pe *Error
	if errors.As(err, &pe) && pe.Reason != "" {
		return strings.TrimSpace(pe.Reason + " " + pe.Hint)
	}
	return "majlis could not delete it: " + err.Error()
}
