package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// Handing a pooled worktree out (allocate, after its claim is published):
//
//  1. take: publish the pooled worktree's taken event, no-clobber, naming
//     the allocation (binding and request id): only one allocation wins;
//  2. verify (checkPooled): still the worktree majlis made, still clean;
//  3. switch it to the claim's base, touching only the files that differ;
//  4. give git's entry the workspace's lock and pin (the lock file and the
//     pin replaced whole: it is never unlocked);
//  5. rename it to the workspace path, and point git's entry at it;
//  6. put HEAD on the branch (created at the base, or the existing one);
//  7. publish the workspace's created event, run post-checkout.
//
// A pooled worktree that fails 2 to 5 is set aside (its aside event) and
// the allocation goes on with the next one, or with git worktree add: the
// claim is untouched and its path still free. After 5, a failure undoes
// the allocation as a failed git worktree add is undone.

var (
	fpPoolTaken    = failpoint.New("pool/taken")    // the taken event published, nothing checked
	fpPoolSwitched = failpoint.New("pool/switched") // switched to the base, still the pool's
	fpPoolHanded   = failpoint.New("pool/handed")   // git's entry is the workspace's, not yet moved
	fpPoolMoved    = failpoint.New("pool/moved")    // renamed to the workspace path, HEAD still detached
)

// maxPoolTries bounds how many pooled worktrees one allocation takes.
const maxPoolTries = 3

// poolTimings is where a hand-out's time went (the benchmarks report it).
type poolTimings struct{ verify, switching, records time.Duration }

// lastPoolTimings holds the last hand-out's timings, for the benchmarks.
var lastPoolTimings atomic.Pointer[poolTimings]

// allocateFromPool hands a pooled worktree out as rec's workspace. When
// it does not (use.Used false), nothing was done to rec's path and the
// allocation goes on with git worktree add.
func (p *Provider) allocateFromPool(ctx context.Context, rec *claimRecord) (*Workspace, PoolUse, error) {
	c := rec.Claim
	if c.Detached || c.Restore != "" {
		return nil, PoolUse{Reason: "restore"}, nil
	}
	switch has, err := p.baseHasSubmodules(ctx, nil, c.Base); {
	case err != nil:
		return nil, PoolUse{Reason: "unreadable"}, nil
	case has:
		return nil, PoolUse{Reason: "submodules"}, nil
	}
	recs, err := p.poolRecords()
	if err != nil {
		return nil, PoolUse{Reason: "unreadable"}, nil
	}
	if _, err := p.PoolKeepIgnored(); err != nil {
		return nil, PoolUse{Reason: "unreadable"}, nil // the check could not say what may stay in one
	}
	use := PoolUse{Reason: "empty"}
	tries := 0
	for _, cand := range recs {
		if poolState(cand) != wire.PoolReady {
			continue
		}
		if why := p.poolUnfit(cand, c.Path); why != "" {
			return nil, PoolUse{Reason: why}, nil
		}
		if tries++; tries > maxPoolTries {
			break
		}
		ev, err := p.records.Publish(cand, Event{Kind: EventTaken, Taker: c.Binding, RequestID: c.RequestID, Head: c.Base})
		if err != nil {
			return nil, PoolUse{}, p.undoAllocation(ctx, rec, err, made{})
		}
		if ev.Taker != c.Binding || ev.RequestID != c.RequestID {
			continue // another allocation took it first
		}
		if err := fpPoolTaken.Inject(); err != nil {
			p.setAside(rec, cand, "the allocation of "+c.Binding+" stopped: "+err.Error())
			return nil, PoolUse{}, p.undoAllocation(ctx, rec, err, made{})
		}
		ws, err := p.handOut(ctx, rec, cand)
		var pc *errPoolCheck
		if errors.As(err, &pc) {
			p.setAside(rec, cand, pc.why)
			use.Reason = "checks_failed"
			continue
		}
		if err != nil {
			return nil, PoolUse{}, err
		}
		return ws, PoolUse{Used: true, Name: cand.Claim.Binding}, nil
	}
	return nil, use, nil
}

// poolUnfit says why a pooled worktree cannot become the workspace at
// path at all (nor any other of the pool): "" when it can.
func (p *Provider) poolUnfit(cand *claimRecord, path string) string {
	if why := p.poolSettingsUnfit(); why != "" {
		return why
	}
	if _, err := os.Lstat(filepath.Join(cand.Claim.Path, ".gitmodules")); err == nil {
		return "submodules"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "unreachable"
	}
	var a, b syscall.Stat_t
	if syscall.Stat(filepath.Dir(path), &b) != nil {
		return "unreachable"
	}
	if syscall.Lstat(cand.Claim.Path, &a) != nil {
		return "" // gone or unreadable: its checks set it aside, and the next one is tried
	}
	if a.Dev != b.Dev {
		return "another_file_system"
	}
	if dotgit, err := os.ReadFile(filepath.Join(cand.Claim.Path, ".git")); err == nil &&
		!filepath.IsAbs(strings.TrimSpace(strings.TrimPrefix(string(dotgit), "gitdir:"))) &&
		filepath.Dir(cand.Claim.Path) != filepath.Dir(path) {
		return "relative_paths" // worktree.useRelativePaths: its .git file would point nowhere from there
	}
	return ""
}

// setAside records why a taken pooled worktree was not handed out: it is
// never handed out again (doctor names it). Its lock and pin go back to
// the pool's when the hand-out had given them to the workspace.
func (p *Provider) setAside(rec, cand *claimRecord, why string) {
	if entry, err := verifyRepository("pool", cand); err == nil {
		_ = gitops.ReplaceLock(entry, lockReason(rec), lockReason(cand))
		_ = gitops.ReplaceEntryPin(entry, rec.Digest, cand.Digest)
	}
	_, _ = p.records.Publish(cand, Event{Kind: EventAside, Reason: why})
}

// handOut verifies, switches and moves the taken pooled worktree cand
// into rec's place, and finishes the workspace there. An *errPoolCheck
// means cand was left in the pool's folder (to be set aside) and rec's
// path is untouched. heads are commits besides cand's base its HEAD may
// be found at, clean: the base an interrupted hand-out of rec switched
// it to (resumeHandOut).
func (p *Provider) handOut(ctx context.Context, rec, cand *claimRecord, heads ...string) (*Workspace, error) {
	c := rec.Claim
	var tm poolTimings
	start := time.Now()
	// The process scan lists /proc before this process forks git into
	// the pooled folder (a fork has this process's name, and the stamp's
	// open folders, until it runs git); the settings' git starts once the
	// stamp let go of them.
	users := scanPoolUsers(cand.Claim.PhysicalPath)
	entry, head, err := p.checkPooledAt(ctx, cand, poolCheck{dir: cand.Claim.Path, needLock: true, fast: true, heads: heads})
	if err != nil {
		return nil, err
	}
	settings := p.checkPoolSettings(ctx, cand)
	tm.verify = time.Since(start)
	start = time.Now()
	p.progress(Progress{Op: "allocate", Binding: c.Binding, Step: "switching a pooled worktree to " + shortDigest(c.Base)})
	if err := gitops.SwitchPooled(ctx, cand.Claim.Path, head, c.Base); err != nil {
		return nil, poolCheckFailed("switching it to %s failed: %v", shortDigest(c.Base), err)
	}
	tm.switching = time.Since(start)
	if err := fpPoolSwitched.Inject(); err != nil {
		return nil, poolCheckFailed("the allocation stopped after switching it: %v", err)
	}
	if err := errors.Join(users(), settings()); err != nil {
		return nil, err
	}
	start = time.Now()
	if err := gitops.ReplaceLock(entry, lockReason(cand), lockReason(rec)); err != nil {
		return nil, poolCheckFailed("giving it the workspace's lock: %v", err)
	}
	if err := gitops.ReplaceEntryPin(entry, cand.Digest, rec.Digest); err != nil {
		return nil, poolCheckFailed("giving it the workspace's pin: %v", err)
	}
	if err := fpPoolHanded.Inject(); err != nil {
		return nil, poolCheckFailed("the allocation stopped before moving it: %v", err)
	}
	if err := durable.MoveDir(cand.Claim.Path, c.Path); err != nil {
		return nil, poolCheckFailed("renaming it to %s: %v", c.Path, err)
	}
	ws, err := p.finishHandOut(ctx, rec, cand, entry)
	tm.records = time.Since(start)
	lastPoolTimings.Store(&tm)
	return ws, err
}

// finishHandOut finishes a workspace renamed into place from the pool:
// git's entry points at it, HEAD goes on the branch, the created event is
// published and post-checkout runs. A failure undoes the allocation.
func (p *Provider) finishHandOut(ctx context.Context, rec, cand *claimRecord, entry string) (*Workspace, error) {
	c := rec.Claim
	if err := gitops.RepointEntry(entry, entryPath(c)); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{worktree: true})
	}
	if err := fpPoolMoved.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{worktree: true})
	}
	newBranch := !c.Checkout
	if err := gitops.PutHeadOnBranch(ctx, c.Path, c.Branch, c.Base, newBranch); err != nil {
		m := made{worktree: true, branch: newBranch && !errors.Is(err, gitops.ErrRefExists)}
		if errors.Is(err, gitops.ErrRefExists) {
			err = gitops.ErrBranchExists
		}
		return nil, p.undoAllocation(ctx, rec, err, m)
	}
	return p.publishHandedOut(ctx, rec, cand)
}

// publishHandedOut publishes the created event of a workspace handed out
// from the pool (its folder keeps the pooled worktree's identity) and runs
// post-checkout as git worktree add would have.
func (p *Provider) publishHandedOut(ctx context.Context, rec, cand *claimRecord) (*Workspace, error) {
	c := rec.Claim
	all := made{worktree: true, branch: !c.Checkout}
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if err := gitops.RunPostCheckout(ctx, c.CommonDir, c.Path, c.Base); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if _, err := p.records.Publish(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	// The pooled worktree's claim retires: the workspace's stands for the
	// folder now. Left unpublished (a crash), doctor and drain read the
	// same from the taker's created event (takenOutcome).
	_, _ = p.records.Publish(cand, Event{Kind: EventHanded, Taker: c.Binding, RequestID: c.RequestID})
	p.dropPoolStamp(cand.Claim.Binding)
	if err := fpAllocateCreated.Inject(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}

// resumeHandOut resumes the hand-out of cand, still in the pool's folder,
// to rec, whose allocation took it and died: cand's lock and pin, which
// the interrupted hand-out may have given to rec already, go back to the
// pool's (each replaced whole, only from rec's), and the hand-out runs
// again, accepting HEAD at rec's base (the interrupted one switched it).
func (p *Provider) resumeHandOut(ctx context.Context, rec, cand *claimRecord) (*Workspace, error) {
	entry, err := verifyRepository("pool", cand)
	if err != nil {
		return nil, poolCheckFailed("%v", err)
	}
	if err := gitops.ReplaceLock(entry, lockReason(rec), lockReason(cand)); err != nil {
		return nil, poolCheckFailed("its lock: %v", err)
	}
	if err := gitops.ReplaceEntryPin(entry, rec.Digest, cand.Digest); err != nil {
		return nil, poolCheckFailed("its pin: %v", err)
	}
	return p.handOut(ctx, rec, cand, rec.Claim.Base)
}
