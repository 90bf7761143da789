package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

// allocationBase resolves the allocation's base to a commit, and checks
// its branch: an existing branch checked out must be at the base, and a
// new branch must not exist.
func (p *Provider) allocationBase(ctx context.Context, a *allocation) (string, error) {
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return "", err
	}
	o := &a.o
	if o.CheckoutBranch != "" {
		if err := p.checkCheckoutBranch(ctx, reader, o.Binding, o.Branch); err != nil {
			return "", err
		}
		o.Base = "refs/heads/" + o.Branch
	}
	base, err := reader.ResolveCommit(ctx, o.Base)
	if err != nil {
		if errors.Is(err, gitops.ErrUnknownRevision) {
			return "", a.fail(ErrUnknownBase, fmt.Sprintf("%q names no commit", o.Base), "", "name a branch, tag or commit that exists")
		}
		return "", err
	}
	if o.mode == gitops.ExistingBranch {
		at, err := reader.ResolveCommit(ctx, "refs/heads/"+o.Branch)
		if err != nil || at != base {
			return "", a.fail(ErrBranchExists, o.Branch, "", "branch "+o.Branch+" is not at "+base+" (majlis never moves a branch)")
		}
		return base, nil
	}
	if o.mode == gitops.Detached {
		return base, nil // no branch
	}
	if exists, err := reader.RefExists(ctx, "refs/heads/"+o.Branch); err != nil {
		return "", err
	} else if exists {
		// A concurrent allocation of the same binding may have created it
		// since the binding was checked: that is the binding being live.
		if recs, err := p.records.Binding(o.Binding); err != nil {
			return "", err
		} else if err := liveBindingError(o.Binding, recs); err != nil {
			return "", err
		}
		hint := "majlis never moves an existing branch"
		if o.Branch == "majlis/"+o.Binding {
			hint = "an earlier workspace of " + o.Binding + " kept it; majlis never moves an existing branch"
		}
		return "", &Error{Op: "allocate", Binding: o.Binding, Reason: o.Branch, Hint: hint, Err: ErrBranchExists,
			Details: map[string]any{"branch": o.Branch}}
	}
	return base, nil
}

// checkAllocationPath refuses a path that exists or lies in a git
// directory, and returns its physical path.
func (p *Provider) checkAllocationPath(a *allocation) (string, error) {
	path := a.path
	if _, err := os.Lstat(path); err == nil {
		return "", p.bindingLiveOr(a.o.Binding, a.fail(ErrPathExists, path, path,
			"choose another path, or move what is there"))
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", a.fail(ErrInvalidArgument, err.Error(), path, "")
	}
	physical, err := pathid.Physical(path)
	if err != nil {
		return "", a.fail(ErrInvalidArgument, err.Error(), path, "")
	}
	if err := p.checkOutsideGitDirs(a.o.Binding, path, physical); err != nil {
		return "", err
	}
	return physical, nil
}

// publishAllocation publishes the claim. Git's worktrees are judged
// first, with the ignore rules of those that contain the path; then,
// under the brief provider-wide lease, what only the state folder knows,
// and the claim is published. A workspace created in between, around the
// path, was not judged by its ignore rules: judge again (rarely needed
// twice).
func (p *Provider) publishAllocation(ctx context.Context, a *allocation, claim Claim, physical string, index func() map[string]*indexBinding) (*claimRecord, error) {
	for attempt := 1; ; attempt++ {
		cleared, err := p.checkWorktrees(ctx, a.o, a.path, physical)
		if err != nil {
			return nil, p.bindingLiveOr(a.o.Binding, err)
		}
		if err := fpAllocateChecked.Inject(); err != nil {
			return nil, err
		}
		rec, err := p.publishClaim(ctx, claim, a.args, cleared, index)
		if errors.Is(err, errJudgeAgain) && attempt < 3 {
			continue
		}
		if errors.Is(err, errJudgeAgain) {
			return nil, a.fail(ErrNested, "workspaces around the path kept being created while it was checked", a.path,
				"retry; choose a path outside other workspaces")
		}
		return rec, err
	}
}

// checkWorktrees refuses a path that overlaps a worktree git lists,
// except one inside a worktree that ignores it (or with --allow-nested).
// It returns the worktrees (as git lists them) that contain the path and
// were cleared by their ignore rules.
func (p *Provider) checkWorktrees(ctx context.Context, o AllocateOptions, path, physical string) (map[string]bool, error) {
	worktrees, err := gitops.WorktreePaths(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	// The main worktree, which git does not list when the git directory
	// lives apart from it.
	if p.mainErr != nil {
		return nil, p.mainUnknown("allocate", o.Binding)
	}
	if p.main != "" && !slices.Contains(worktrees, p.main) {
		worktrees = append(worktrees, p.main)
	}
	cleared := map[string]bool{}
	// The worktrees share their parent folders: look each up once.
	resolver := pathid.NewResolver()
	apart, same := apartFrom(path, physical, worktrees)
	for i, w := range worktrees {
		if apart[i] {
			continue
		}
		// A worktree whose folder is one that physical passes through
		// contains the path even when no name says so (a bind mount).
		physicalOf := func(w string) (string, error) {
			op, err := resolver.Physical(w)
			if same[i] != "" && (err != nil || !pathid.Relate(physical, op).Overlapping()) {
				return same[i], nil
			}
			return op, err
		}
		ignored, err := p.checkNesting(ctx, o, path, physical, w, "worktree", physicalOf)
		if err != nil {
			return nil, err
		}
		if ignored {
			cleared[w] = true
		}
	}
	return cleared, nil
}

// apartFrom reports, for each worktree, whether it is proven apart from
// the new workspace path (which does not exist) by one lookup of the
// folder it names instead of resolving it component by component: with a
// thousand worktrees that is most of the nesting check's time.
//
// A worktree that does not contain path by name can still contain it
// physically, through a symbolic link or another name of a folder; then
// the folder it names is one of the folders physical (path, resolved)
// passes through, and has the same identity. It cannot lie inside path,
// which does not exist, unless it does not exist either. So a worktree
// that exists, whose folder is none of those physical passes through, is
// apart. Every other worktree (one that overlaps path by name, or that
// cannot be looked up, or whose folder is one of those) is left to
// checkNesting, as before. same names, for a worktree whose folder is
// one of those, that folder as physical names it: the worktree holds
// the path even when resolving its name does not say so (a bind mount
// gives a folder another name that no symbolic link explains).
func apartFrom(path, physical string, worktrees []string) (apart []bool, same []string) {
	type folder struct {
		dir string
		id  pathid.FileID
	}
	var through []folder
	for dir := physical; ; dir = filepath.Dir(dir) { // physical itself, should it exist by now
		if id, err := pathid.Stat(dir); err == nil {
			through = append(through, folder{dir, id})
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	apart, same = make([]bool, len(worktrees)), make([]string, len(worktrees))
	if len(through) > 0 && through[0].dir == physical {
		// The path exists by now (made since it was looked at): a
		// worktree may lie inside it, which no lookup here would see.
		return apart, same
	}
	workers.Each(len(worktrees), 2, func(i int) {
		w := worktrees[i]
		id, err := pathid.Stat(w)
		if err == nil {
			for _, t := range through {
				if id.Equal(t.id) {
					same[i] = t.dir
					return
				}
			}
		}
		apart[i] = err == nil && !pathid.Relate(path, w).Overlapping()
	})
	return apart, same
}

// errJudgeAgain: a workspace around the path was created after its
// worktree was judged; the caller runs the checks again.
var errJudgeAgain = errors.New("a workspace around the path was created meanwhile")

// publishClaim takes the publication lease, checks the binding, reserved
// reclaim targets and every other published claim, created or not, and
// publishes the claim. cleared names the worktrees whose ignore rules
// were found to ignore the path, before the lease.
func (p *Provider) publishClaim(ctx context.Context, claim Claim, args requestArgs, cleared map[string]bool, index func() map[string]*indexBinding) (*claimRecord, error) {
	lease, err := p.publicationLease(ctx, "allocate "+claim.Binding)
	if err != nil {
		return nil, err
	}
	defer lease.Release()

	recs, err := p.records.Binding(claim.Binding)
	if err != nil {
		return nil, err
	}
	if err := liveBindingError(claim.Binding, recs); err != nil {
		return nil, err
	}
	claim.Seq = len(recs) + 1
	if len(recs) > 0 {
		claim.Seq = recs[len(recs)-1].Claim.Seq + 1
	}
	if err := p.checkReserved(ctx, claim.Binding, claim.Path, claim.PhysicalPath, claim.RequestID); err != nil {
		return nil, err
	}
	others, err := p.liveClaimsThrough(index)
	if err != nil {
		return nil, err
	}
	for _, other := range others {
		if err := p.checkClaimOverlap(claim, other, cleared); err != nil {
			return nil, err
		}
	}
	if !strings.HasPrefix(claim.RequestID, autoRequestPrefix) {
		if err := p.records.RecordRequest(claim.RequestID, args); err != nil {
			return nil, err
		}
	}
	rec, err := p.records.PublishClaim(claim)
	if err != nil {
		return nil, err
	}
	if err := lease.Check(); err != nil {
		// The claim is published whatever happened to the lease; say so.
		return nil, fmt.Errorf("allocate %s: the publication lease was lost while publishing the claim: %w", claim.Binding, err)
	}
	return rec, nil
}

// bindingLiveOr returns the binding_live refusal when the binding has
// become live since it was checked (a concurrent allocation of the same
// binding won: its worktree may be what err found at the path), else err.
func (p *Provider) bindingLiveOr(binding string, err error) error {
	if recs, rerr := p.records.Binding(binding); rerr == nil {
		if lerr := liveBindingError(binding, recs); lerr != nil {
			return lerr
		}
	}
	return err
}

// liveBindingError refuses a binding whose latest claim is live.
func liveBindingError(binding string, recs []*claimRecord) error {
	n := len(recs)
	if n == 0 || !recs[n-1].live() {
		return nil
	}
	last := recs[n-1]
	hint := "use another binding: this one is free again only once its workspace is reclaimed"
	if !last.has(EventCreated) {
		hint = "an allocation of it (request " + last.Claim.RequestID + ") has not finished; a retry with that request id resumes it"
		if last.Claim.FromTrash != "" {
			hint = "a restore of it from its trash folder (request " + last.Claim.RequestID + ") has not finished; 'majlis workspace restore " +
				binding + " --from-trash --request-id " + last.Claim.RequestID + "' finishes it"
		}
	}
	reason := "its workspace is at " + last.Claim.Path
	if last.has(EventReleased) {
		reason = "its workspace at " + last.Claim.Path + " is released but not reclaimed"
		hint = "reclaim it first, or use another binding"
	}
	e := &Error{Op: "allocate", Binding: binding, Path: last.Claim.Path, Err: ErrBindingLive,
		Reason: reason, Hint: hint}
	if !last.has(EventCreated) {
		e.Details = map[string]any{"unfinished_request": last.Claim.RequestID}
	}
	return e
}

func (p *Provider) publicationLease(ctx context.Context, purpose string) (*reservation.Lease, error) {
	return p.publicationLeaseWithin(ctx, purpose, publicationWait)
}

// publicationWait bounds how long a publisher waits for a live one.
const publicationWait = 30 * time.Second

// publicationLeaseWithin takes the publication lease, waiting up to wait
// for a live holder. A holder proven dead (its exact identity gone, its
// witness lock free) is retired at once, expired or not: nothing done
// under the publication lease outlives its holder (it is never held
// across a git command, and each of its writes is one atomic rename or
// link of the holder's own), so waiting for its expiry would protect
// nothing and stall every allocation of the repository for the lease's
// TTL. A holder whose death cannot be proven (another host, another pid
// namespace) is waited for; one that died meanwhile is retired then.
func (p *Provider) publicationLeaseWithin(ctx context.Context, purpose string, wait time.Duration) (*reservation.Lease, error) {
	req := reservation.Request{Resource: "publication", Purpose: purpose, TTL: publicationTTL}
	l, err := p.leases.Acquire(ctx, req)
	if !errors.Is(err, reservation.ErrHeld) {
		return l, err
	}
	if p.retireDeadPublisher(ctx) {
		return p.leases.Acquire(ctx, req)
	}
	req.Wait = wait
	l, err = p.leases.Acquire(ctx, req)
	if errors.Is(err, reservation.ErrHeld) && p.retireDeadPublisher(ctx) {
		req.Wait = 0
		return p.leases.Acquire(ctx, req)
	}
	return l, err
}

// retireDeadPublisher retires the publication lease of a holder proven
// dead; it reports whether it did.
func (p *Provider) retireDeadPublisher(ctx context.Context) bool {
	old, err := p.leases.RecoverDead(ctx, "publication")
	if err != nil {
		return false
	}
	p.log.Info("retired the publication lease of a dead holder", "purpose", old.Purpose, "owner_pid", old.Owner.PID, "generation", old.Generation)
	return true
}

// checkNesting refuses a new workspace path inside (or containing) an
// existing worktree, unless allowed or ignored by that worktree; ignored
// reports the latter.
func (p *Provider) checkNesting(ctx context.Context, o AllocateOptions, path, physical, other, kind string, physicalOf func(string) (string, error)) (ignored bool, err error) {
	rel := pathid.Relate(path, other)
	if !rel.Overlapping() {
		op, err := physicalOf(other)
		if errors.Is(err, pathid.ErrDanglingSymlink) {
			// Named through a link to a folder not made yet (the path
			// itself, perhaps): where it will lie once that is made.
			op, err = pathid.PhysicalAhead(other)
		}
		if err == nil {
			rel = pathid.Relate(physical, op)
		}
	}
	if !rel.Overlapping() {
		return false, nil
	}
	if b := trashBinding(other); b != "" {
		// A kept trash is moved back by an undo or deleted when its
		// window ends, and would take a workspace inside it along: no
		// --allow-nested or ignore rule lets one in.
		return false, &Error{Op: "allocate", Binding: o.Binding, Path: path, Peer: other, Err: ErrNested,
			Reason: fmt.Sprintf("%s overlaps the kept trash of workspace %s at %s (%s): it is moved back by a restore or deleted when its undo window ends", path, b, other, rel),
			Hint:   "choose a path outside it"}
	}
	if rel == pathid.BContainsA {
		if o.AllowNested {
			return false, nil
		}
		relpath, err := filepath.Rel(other, path)
		if err == nil && !strings.HasPrefix(relpath, "..") {
			if ignored, err := gitops.CheckIgnore(ctx, other, relpath); err == nil && ignored {
				return true, nil
			}
		}
	}
	return false, &Error{Op: "allocate", Binding: o.Binding, Path: path, Peer: other, Err: ErrNested,
		Reason: fmt.Sprintf("%s overlaps the %s at %s (%s)", path, kind, other, rel),
		Hint:   "choose a path outside it, or have that worktree ignore the path"}
}

// checkClaimOverlap refuses a claim that overlaps another live claim,
// created or not: containing it always, inside it unless --allow-nested
// or its worktree was found (before the lease, in cleared) to ignore the
// path. A workspace created since that check returns errJudgeAgain.
func (p *Provider) checkClaimOverlap(c Claim, other *claimRecord, cleared map[string]bool) error {
	oc := other.Claim
	rel := pathid.Relate(c.Path, oc.Path)
	if !rel.Overlapping() {
		rel = pathid.Relate(c.PhysicalPath, oc.PhysicalPath)
	}
	// Nothing is ever placed inside a pooled worktree: it must stay clean.
	pooled := other.isPool()
	if !rel.Overlapping() || (rel == pathid.BContainsA && c.AllowNested && !pooled) {
		return nil
	}
	if rel == pathid.BContainsA && other.has(EventCreated) && !pooled {
		if cleared[oc.Path] || cleared[oc.PhysicalPath] {
			return nil // its worktree ignores the path
		}
		return errJudgeAgain
	}
	reason := fmt.Sprintf("%s overlaps workspace %s at %s (%s)", c.Path, oc.Binding, oc.Path, rel)
	if other.damage != nil {
		reason += "; its records are damaged (" + other.damage.File + "), so majlis keeps every place it may be"
	}
	return &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Peer: oc.Path, Err: ErrNested,
		Reason: reason, Hint: "choose another path"}
}

// checkReserved refuses a path that overlaps the target of a held reclaim
// reservation. A reservation in the way that has expired and whose owner
// is proven dead (a reclaimer killed) is recovered first, as a retried
// reclaim would recover it, and is then no longer in the way.
func (p *Provider) checkReserved(ctx context.Context, binding, path, physical string, requestID ...string) error {
	names, err := p.leases.List(reclaimPrefix)
	if err != nil {
		return err
	}
	for _, res := range names {
		rec, err := p.leases.Inspect(res)
		if errors.Is(err, reservation.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		// A restore from the trash holds the reservation of the binding's
		// reclaimed claim, under its own request id, while it publishes the
		// new claim: that one is not in its way.
		if len(requestID) > 0 && rec.Metadata["binding"] == binding && rec.Metadata["request_id"] == requestID[0] {
			continue
		}
		target := rec.Metadata["path"]
		ptarget := rec.Metadata["physical_path"]
		if target == "" || ptarget == "" {
			return &Error{Op: "allocate", Binding: binding, Path: p.leases.Path(), Err: ErrMalformed,
				Reason: "reclaim reservation " + res + " names no target path"}
		}
		inside := ""
		if others, err := p.liveClaims(); err == nil {
			for _, w := range others {
				// A workspace that contains the target is reserved with it.
				if pathid.Contains(w.Claim.Path, target) && pathid.Contains(w.Claim.Path, path) {
					inside = w.Claim.Path
				}
			}
		} else {
			return err
		}
		if inside != "" || pathid.Relate(path, target).Overlapping() || pathid.Relate(physical, ptarget).Overlapping() {
			if p.recoverDeadReservation(ctx, res) || p.retireDoneReservation(ctx, res) {
				continue
			}
			return &Error{Op: "allocate", Binding: binding, Path: path, Peer: target, Err: ErrReserved,
				Reason: fmt.Sprintf("%s overlaps %s, which a reclaim of %s has reserved", path, target, rec.Metadata["binding"]),
				Hint:   "wait for the reclaim to finish (if its process died, recover the reservation of " + rec.Metadata["binding"] + " once it expires), or choose another path"}
		}
	}
	return nil
}

// liveClaims returns the latest live claim of every binding.
// A damaged binding contributes a stand-in for every place its workspaces
// may occupy, or refuses when they cannot all be located (damage.go).
func (p *Provider) liveClaims() ([]*claimRecord, error) {
	return p.liveClaimsThrough(p.records.Index)
}

// liveClaimsThrough is liveClaims with the claims index that index gives.
func (p *Provider) liveClaimsThrough(index func() map[string]*indexBinding) ([]*claimRecord, error) {
	inv, err := p.inventoryOf(p.records.EachThrough(index))
	if err != nil {
		return nil, err
	}
	out, err := inv.peerRecords("allocate")
	if err != nil {
		return nil, err
	}
	for _, recs := range inv.good {
		for _, r := range recs {
			if r.live() {
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// checkCheckoutBranch refuses --checkout of a branch that does not exist
// (ErrUnknownBranch) or that a worktree has checked out
// (ErrBranchCheckedOut, naming the worktree): git would refuse it too, and
// majlis never takes a branch from under another worktree.
func (p *Provider) checkCheckoutBranch(ctx context.Context, reader *gitops.Reader, binding, branch string) error {
	exists, err := reader.RefExists(ctx, "refs/heads/"+branch)
	if err != nil {
		return err
	}
	if !exists {
		return &Error{Op: "allocate", Binding: binding, Err: ErrUnknownBranch, Reason: "no branch named " + branch,
			Hint: "name an existing local branch (git branch --list)"}
	}
	wts, err := gitops.ListWorktrees(ctx, p.reg.CommonDir)
	if err != nil {
		return err
	}
	for _, w := range wts {
		if w.Branch == "refs/heads/"+branch {
			return &Error{Op: "allocate", Binding: binding, Path: w.Path, Err: ErrBranchCheckedOut,
				Reason:  "branch " + branch + " is checked out in the worktree " + w.Path,
				Hint:    "switch that worktree to another branch, or reclaim its workspace, first",
				Details: map[string]any{"worktree": w.Path, "branch": branch}}
		}
	}
	return nil
}
