package provider

// Recycling a kept trash into the warm pool (pool.md, "Recycling"). The
// purge of a kept trash that is due because its time is up (never one
// that goes early for space, never a reclaim's own deletion), once it has
// salvaged what changed in it, gives the folder to the pool instead of
// deleting it while the pool is below pool.size:
//
//  1. the pooled worktree's claim is published (its own binding, a new
//     folder of the workspace root), then the trash's purging event names
//     it (Taker): from then on the trash is not restorable from the
//     folder, and a purge that finds the event finishes the recycling or,
//     unfinished, deletes the folder wherever it is;
//  2. the folder is renamed into the pool's folder (one rename, same
//     parent: a path no task used); a process that has it open now (its
//     working directory or an open file followed the rename) sends it to
//     the deletion;
//  3. git's old entry is dropped (it is in the purge's salvage, which is
//     checked first), and a fresh one made (gitops.FreshEntry): nothing of
//     the task's per-worktree state is carried over;
//  4. it is cleaned to the pool's base, inside the pool's folder only
//     (gitops.CleanToBase), verified as a hand-out verifies a pooled
//     worktree (checkPooled, git status included), stamped, and published
//     ready (its created event);
//  5. the trash's purged event names the pooled worktree.
//
// Any failure after 1 deletes the folder (it is salvaged) and retires the
// pooled claim: the trash is purged as it would have been.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/openers"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

var (
	fpRecycleClaimed = failpoint.New("pool/recycle-claimed") // the pooled claim published, the trash not yet marked purging
	fpRecycleMoved   = failpoint.New("pool/recycle-moved")   // the trash folder renamed into the pool's folder
	fpRecycleDropped = failpoint.New("pool/recycle-dropped") // git's old entry dropped, no new one
	fpRecycleEntry   = failpoint.New("pool/recycle-entry")   // the fresh entry made, the folder not cleaned
	fpRecycleCleaned = failpoint.New("pool/recycle-cleaned") // cleaned to the base, not verified nor ready
	fpRecycleReady   = failpoint.New("pool/recycle-ready")   // published ready, the trash not yet recorded purged
)

// recycleKeepIgnored lists the ignored paths a recycled worktree keeps
// (pool.keep_ignored, PoolKeepIgnored): the cleaning leaves them, and the
// check of a pooled worktree (checkPooled) accepts in them only files git
// ignores (poolkeep.go); anything else there fails it, and the trash is
// purged as without a pool.
func (p *Provider) recycleKeepIgnored() ([]string, error) { return p.PoolKeepIgnored() }

// recycleClaim decides whether the kept trash of r (salvaged, due for
// due) goes into the pool, and if so publishes the pooled claim it will
// become. It returns nil when the trash is purged as usual.
func (p *Provider) recycleClaim(ctx context.Context, r *claimRecord, due string) *claimRecord {
	why, base := p.recycleRefusal(ctx, r, due)
	if why != "" {
		p.log.Debug("the kept trash is deleted, not recycled into the pool", "binding", r.Claim.Binding, "why", why)
		return nil
	}
	rec, err := p.publishPoolClaim(ctx, "pool recycle", base, "HEAD")
	if err != nil {
		p.log.Warn("the kept trash is deleted, not recycled: publishing a pooled claim failed", "binding", r.Claim.Binding, "error", err)
		return nil
	}
	return rec
}

// recycleRefusal says why the kept trash of r is not recycled ("" when it
// is), and the commit the pooled worktree is made at (HEAD of the main
// worktree, as pool fill's default).
func (p *Provider) recycleRefusal(ctx context.Context, r *claimRecord, due string) (why, base string) {
	mv := r.Events[EventMoved]
	switch {
	case due != DueExpired:
		return "it goes early (" + due + "): space is short", ""
	case mv == nil || r.Events[EventReclaimed].AdminKept != "":
		return "no folder is kept", ""
	case filepath.Clean(filepath.Dir(mv.TrashPath)) != filepath.Clean(p.reg.WorkspaceRoot):
		return "it is not in the workspace root", ""
	}
	size, _, err := p.PoolSize()
	if err != nil || size == 0 {
		return "no pool is kept", ""
	}
	recs, err := p.poolRecords()
	if err != nil {
		return "the pool's records cannot be read", ""
	}
	if n := poolFilled(recs); n >= size {
		return fmt.Sprintf("the pool has %d of %d", n, size), ""
	}
	if _, err := os.Lstat(filepath.Join(mv.TrashPath, ".gitmodules")); !errors.Is(err, os.ErrNotExist) {
		return "it has submodules", ""
	}
	if _, err := os.Lstat(filepath.Join(mv.AdminEntry, "modules")); !errors.Is(err, os.ErrNotExist) {
		return "it has submodules", ""
	}
	if dotgit, err := os.ReadFile(filepath.Join(mv.TrashPath, ".git")); err != nil ||
		!filepath.IsAbs(strings.TrimSpace(strings.TrimPrefix(string(dotgit), "gitdir:"))) {
		return "git writes relative paths for it", ""
	}
	if who := openedBy(mv.TrashPath); who != "" {
		return who, ""
	}
	if why := mountedInside(mv.TrashPath); why != "" {
		return why, ""
	}
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return "the repository cannot be read", ""
	}
	if base, err = reader.ResolveCommit(ctx, "HEAD"); err != nil {
		return "HEAD names no commit", ""
	}
	if has, err := reader.HasGitmodules(ctx, base); err != nil || has {
		return "the pool's base has submodules (or cannot be read)", "" // never handed out
	}
	return "", base
}

// poolFilled counts the pooled worktrees that are, or are becoming, ready:
// ready ones, and those a live fill or recycling is making.
func poolFilled(recs []*claimRecord) int {
	n := 0
	for _, r := range recs {
		switch poolState(r) {
		case wire.PoolReady:
			n++
		case wire.PoolFilling:
			if live, _ := procid.Judge(r.Claim.Allocator); live != procid.Dead {
				n++
			}
		}
	}
	return n
}

// openedBy names a process of this user that uses the folder dir (its
// working directory, root, executable or an open file inside it), or
// says why that cannot be known; "" when none does.
func openedBy(dir string) string {
	phys, err := pathid.Physical(dir)
	if err != nil {
		return "it cannot be looked at: " + err.Error()
	}
	found, err := openers.Scan([]string{phys})
	if err != nil {
		return "the processes using it cannot be listed: " + err.Error()
	}
	if ps := found[filepath.Clean(phys)]; len(ps) > 0 {
		return fmt.Sprintf("process %d (%s) uses it (%s)", ps[0].PID, ps[0].Command, ps[0].Use)
	}
	return ""
}

// mountedInside says what is mounted inside the folder dir (another file
// system: cleaning would reach into it), or why that cannot be known; ""
// when nothing is.
func mountedInside(dir string) string {
	phys, err := pathid.Physical(dir)
	if err != nil {
		return "it cannot be looked at: " + err.Error()
	}
	mounts, err := durable.MountsUnder(phys)
	switch {
	case err != nil:
		return "the file systems mounted inside it cannot be listed: " + err.Error()
	case len(mounts) > 0:
		return "a file system is mounted inside it at " + mounts[0]
	}
	return ""
}

// recycleStage is where the fresh git entry of a recycled pooled
// worktree is written before it is renamed into git's worktrees folder.
func (p *Provider) recycleStage(pool *claimRecord) string {
	return filepath.Join(p.stateDir, "pool", pool.Claim.Binding+".entry")
}

// recycleTimings is where a recycling's time went: the rename and git's
// entries, the cleaning, the check and the records (the benchmark
// reports it).
type recycleTimings struct{ entry, clean, verify time.Duration }

// lastRecycleTimings holds the last recycling's timings, for the
// benchmark.
var lastRecycleTimings atomic.Pointer[recycleTimings]

// recycle moves the kept trash of r, marked purging for the pooled
// claim pool, into the pool (steps 2 to 4 at the top of this file).
func (p *Provider) recycle(ctx context.Context, r, pool *claimRecord, salvageRef string, lease *reservation.Session) error {
	mv, c := r.Events[EventMoved], pool.Claim
	var tm recycleTimings
	start := time.Now()
	if err := lease.Check(); err != nil {
		return err
	}
	if err := durable.MoveDir(mv.TrashPath, c.Path); err != nil {
		return err
	}
	if err := p.inject(ctx, fpRecycleMoved); err != nil {
		return err
	}
	// A process that had it open followed the rename: the next task's
	// workspace must not be its working directory.
	if who := openedBy(c.Path); who != "" {
		return errors.New(who)
	}
	if why := mountedInside(c.Path); why != "" {
		return errors.New(why) // cleaning must never reach into another file system
	}
	if err := p.salvageHeld(ctx, r, salvageRef); err != nil {
		return err
	}
	if err := p.deleteTrash(r, mv); err != nil { // the folder left its trash path: git's old entry
		return err
	}
	if err := p.inject(ctx, fpRecycleDropped); err != nil {
		return err
	}
	if err := durable.MkdirAll(filepath.Dir(p.recycleStage(pool)), 0o755); err != nil {
		return err
	}
	entry, err := gitops.FreshEntry(ctx, c.CommonDir, p.recycleStage(pool), c.Path, c.Base, lockReason(pool), pool.Digest)
	if err != nil {
		return err
	}
	if err := p.inject(ctx, fpRecycleEntry); err != nil {
		return err
	}
	tm.entry, start = time.Since(start), time.Now()
	keep, err := p.recycleKeepIgnored()
	if err != nil {
		return err
	}
	if err := p.recordPoolSettings(ctx, pool); err != nil { // those it is cleaned under
		return err
	}
	if err := gitops.CleanToBase(ctx, c.Path, c.Base, keep); err != nil {
		return err
	}
	if err := p.inject(ctx, fpRecycleCleaned); err != nil {
		return err
	}
	tm.clean, start = time.Since(start), time.Now()
	err = p.recycledReady(ctx, r, pool, entry)
	tm.verify = time.Since(start)
	lastRecycleTimings.Store(&tm)
	return err
}

// recycledReady verifies the recycled pooled worktree as a hand-out does
// (without the stamp), stamps it, and publishes it ready.
func (p *Provider) recycledReady(ctx context.Context, r, pool *claimRecord, entry string) error {
	c := pool.Claim
	var stamp *poolStamp // none: its hand-out runs git status
	if kept, err := p.PoolKeepIgnored(); err == nil {
		stamp, _ = stampOf(pool, entry, kept) // under the policy the hand-out checks it with
	}
	if _, err := p.checkPooled(ctx, pool, true, false); err != nil {
		return err // git status, run after the stamp was taken, found it clean
	}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return err
	}
	if want := createdIdentity(r); id.Dev != want.Dev || id.Ino != want.Ino {
		return fmt.Errorf("%s is not the folder of the kept trash", c.Path)
	}
	if who := openedBy(c.Path); who != "" {
		return errors.New(who)
	}
	if stamp != nil {
		p.writePoolStamp(stamp)
	}
	if _, err := p.records.Publish(pool, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return err
	}
	return p.inject(ctx, fpRecycleReady)
}

// salvageHeld checks that what the trash of r held is on a salvage ref
// before git's entry of it is dropped: the purge's own salvage, or the
// last one of the claim when the purge found nothing new.
func (p *Provider) salvageHeld(ctx context.Context, r *claimRecord, salvageRef string) error {
	ref := salvageRef
	if refs := salvagesOf(r); ref == "" && len(refs) > 0 {
		ref = refs[len(refs)-1]
	}
	if ref == "" {
		return nil // nothing of its own to keep (the purge's snapshot held nothing new)
	}
	if _, err := gitops.TreeOf(ctx, r.Claim.CommonDir, ref); err != nil {
		return fmt.Errorf("its salvage %s cannot be read: %w", ref, err)
	}
	return nil
}
