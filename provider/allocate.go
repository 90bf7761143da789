package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/internal/workers"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/reservation"
)

var (
	fpAllocateClaimed = failpoint.New("allocate/claimed")
	fpAllocateCreated = failpoint.New("allocate/created")
	// fpAllocateChecked fires after git's worktrees were checked for
	// nesting, before the publication lease.
	fpAllocateChecked = failpoint.New("allocate/checked")
	// fpAllocatePin fires before the new worktree's entry is pinned: with
	// many worktrees, while git checks its files out.
	fpAllocatePin = failpoint.New("allocate/pin")
)

// publicationTTL bounds how long a crashed publisher can block others
// before its lease may be recovered (it is released within milliseconds
// in normal operation).
const publicationTTL = 30 * time.Second

// AllocateOptions describe a workspace to allocate.
type AllocateOptions struct {
	Binding string
	Base    string // revision; default HEAD of the main worktree
	Branch  string // default majlis/<binding>
	// CheckoutBranch names an existing branch to check out as it is,
	// instead of creating Branch at Base: the workspace starts at its
	// tip. It must not be checked out in any worktree. majlis never
	// moves or deletes it (the claim records Checkout).
	CheckoutBranch string
	Path           string   // default <workspace root>/<binding>; relative to the working directory
	Intent         []string // repository paths the task will touch (literal or trailing /**)
	OwnerPID       int      // a process whose life marks the workspace as in use
	AllowNested    bool     // allow a path inside another worktree that does not ignore it
	RequestID      string   // retrying with the same id returns the recorded result

	// Set by restore only: how HEAD is set (a new branch, an existing
	// branch already at Base, or detached), and what fills the worktree,
	// which is then created without a checkout.
	mode     gitops.CheckoutMode
	populate func(ctx context.Context, path string) error
	restore  string // the salvage ref a restore fills the worktree from
}

// Allocate creates a linked worktree for a binding, after publishing its
// claim. See docs/design.md and docs/workspaces.md for the rules it enforces.
func (p *Provider) Allocate(ctx context.Context, o AllocateOptions) (*Workspace, error) {
	fail := func(err error, reason, path, hint string) error {
		return &Error{Op: "allocate", Binding: o.Binding, Path: path, Reason: reason, Hint: hint, Err: err}
	}
	if err := ValidBinding(o.Binding); err != nil {
		return nil, err
	}
	intent, err := normalizeIntent(o.Intent)
	if err != nil {
		return nil, fail(ErrInvalidArgument, err.Error(), "", "")
	}
	if o.CheckoutBranch != "" {
		if o.Branch != "" || o.Base != "" || o.mode != gitops.NewBranch {
			return nil, fail(ErrInvalidArgument, "an existing branch to check out is its own base", "",
				"a new branch name and a base do not apply to an existing branch")
		}
		o.Branch, o.mode = o.CheckoutBranch, gitops.ExistingBranch
	}
	if o.mode == gitops.Detached {
		o.Branch = ""
	} else {
		if o.Branch == "" {
			o.Branch = "majlis/" + o.Binding
		}
		if err := gitops.CheckBranchName(o.Branch); err != nil {
			return nil, fail(ErrInvalidArgument, err.Error(), "", "")
		}
	}
	if o.Path == "" {
		o.Path = filepath.Join(p.reg.WorkspaceRoot, o.Binding)
	}
	path, err := pathid.Lexical(o.Path)
	if err != nil {
		return nil, fail(ErrInvalidArgument, err.Error(), o.Path, "")
	}
	if o.Base == "" {
		o.Base = "HEAD"
	}
	var owner procid.Owner
	if o.OwnerPID != 0 {
		if o.OwnerPID < 0 {
			return nil, fail(ErrInvalidArgument, fmt.Sprintf("owner pid %d is not a process id", o.OwnerPID), "", "")
		}
		if owner, err = procid.Of(o.OwnerPID); err != nil {
			return nil, fail(ErrInvalidArgument, "the owner process is not running: "+err.Error(), "", "")
		}
	}
	if o.RequestID == "" {
		o.RequestID = autoRequestPrefix + newID()[:16]
	}
	args := requestArgs{Op: "allocate", Binding: o.Binding, Base: o.Base, Branch: o.Branch, Path: path,
		Intent: intent, OwnerPID: o.OwnerPID, AllowNested: o.AllowNested, Checkout: o.CheckoutBranch != ""}
	// The claims index is read from here on, while git's refs and
	// worktrees are checked; the records are checked against it under the
	// lease (prefetchIndex).
	index := p.prefetchIndex()

	// A retry of an earlier request returns its result or finishes it.
	if rec, err := p.findRequestClaim(o.Binding, o.RequestID); err != nil {
		return nil, err
	} else if rec != nil {
		if err := p.checkRequest(o.RequestID, args); err != nil {
			return nil, err
		}
		return p.resumeAllocation(ctx, rec)
	}
	if err := p.checkRequest(o.RequestID, args); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// A live binding is refused before anything else (and again under the
	// publication lease, which is what decides).
	if recs, err := p.readBinding(o.Binding); err != nil {
		return nil, err
	} else if err := liveBindingError(o.Binding, recs); err != nil {
		return nil, err
	}

	// Facts that need git come before the publication lease, which is
	// never held across a git command.
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	if o.CheckoutBranch != "" {
		if err := p.checkCheckoutBranch(ctx, reader, o.Binding, o.Branch); err != nil {
			return nil, err
		}
		o.Base = "refs/heads/" + o.Branch
	}
	base, err := reader.ResolveCommit(ctx, o.Base)
	if err != nil {
		if errors.Is(err, gitops.ErrUnknownRevision) {
			return nil, fail(ErrUnknownBase, fmt.Sprintf("%q names no commit", o.Base), "", "name a branch, tag or commit that exists")
		}
		return nil, err
	}
	if o.mode == gitops.ExistingBranch {
		at, err := reader.ResolveCommit(ctx, "refs/heads/"+o.Branch)
		if err != nil || at != base {
			return nil, fail(ErrBranchExists, o.Branch, "", "branch "+o.Branch+" is not at "+base+" (majlis never moves a branch)")
		}
	} else if o.mode == gitops.Detached {
		// no branch
	} else if exists, err := reader.RefExists(ctx, "refs/heads/"+o.Branch); err != nil {
		return nil, err
	} else if exists {
		// A concurrent allocation of the same binding may have created it
		// since the binding was checked: that is the binding being live.
		if recs, err := p.readBinding(o.Binding); err != nil {
			return nil, err
		} else if err := liveBindingError(o.Binding, recs); err != nil {
			return nil, err
		}
		hint := "majlis never moves an existing branch"
		if o.Branch == "majlis/"+o.Binding {
			hint = "an earlier workspace of " + o.Binding + " kept it; majlis never moves an existing branch"
		}
		return nil, &Error{Op: "allocate", Binding: o.Binding, Reason: o.Branch, Hint: hint, Err: ErrBranchExists,
			Details: map[string]any{"branch": o.Branch}}
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, p.bindingLiveOr(o.Binding, fail(ErrPathExists, path, path,
			"choose another path, or move what is there"))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fail(ErrInvalidArgument, err.Error(), path, "")
	}
	physical, err := pathid.Physical(path)
	if err != nil {
		return nil, fail(ErrInvalidArgument, err.Error(), path, "")
	}
	if err := p.checkOutsideGitDirs(o.Binding, path, physical); err != nil {
		return nil, err
	}
	claim := Claim{Format: formatClaim, Binding: o.Binding, RequestID: o.RequestID, Path: path,
		PhysicalPath: physical, CommonDir: p.reg.CommonDir, RepositoryID: p.reg.ID, Base: base,
		BaseRef: o.Base, Branch: o.Branch, Intent: intent, OwnerPID: o.OwnerPID, OwnerStart: owner.StartTime,
		AllowNested: o.AllowNested, CreatedAt: p.now().UTC(),
		Checkout: o.mode == gitops.ExistingBranch, Detached: o.mode == gitops.Detached, Restore: o.restore}
	if claim.Allocator, err = procid.Of(os.Getpid()); err != nil {
		return nil, err
	}
	var rec *claimRecord
	for attempt := 1; ; attempt++ {
		// Git's worktrees, with the ignore rules of those that contain
		// the path; then, under the brief provider-wide lease, what only
		// the state folder knows, and the claim is published. A
		// workspace created in between, around the path, was not judged
		// by its ignore rules: judge again (rarely needed twice).
		cleared, err := p.checkWorktrees(ctx, o, path, physical)
		if err != nil {
			return nil, p.bindingLiveOr(o.Binding, err)
		}
		if err := fpAllocateChecked.Inject(); err != nil {
			return nil, err
		}
		rec, err = p.publishClaim(ctx, claim, args, cleared, index)
		if errors.Is(err, errJudgeAgain) {
			if attempt < 3 {
				continue
			}
			return nil, fail(ErrNested, "workspaces around the path kept being created while it was checked", path,
				"retry; choose a path outside other workspaces")
		}
		if err != nil {
			return nil, err
		}
		break
	}
	if err := fpAllocateClaimed.Inject(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	p.progress(Progress{Op: "allocate", Binding: rec.Claim.Binding, Step: "checking out " + shortDigest(rec.Claim.Base) + " into " + rec.Claim.Path})
	return p.createWorktree(ctx, rec, o.populate)
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

	recs, err := p.readBinding(claim.Binding)
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
		if err := p.recordRequest(claim.RequestID, args); err != nil {
			return nil, err
		}
	}
	data, digest, err := seal("claim", &claim)
	if err != nil {
		return nil, err
	}
	dir := p.claimsDir(claim.Binding)
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return nil, &Error{Op: "allocate", Binding: claim.Binding, Path: dir, Err: err}
	}
	// The journal names the claim before it exists (see journal.go): the
	// claim is written beside the journal's line, and named only once the
	// line is durable.
	type prepared struct {
		p   *durable.Prepared
		err error
	}
	ready := make(chan prepared, 1)
	go func() {
		pr, err := durable.Prepare(dir, claimName(claim.Seq, "claim"), data)
		ready <- prepared{pr, err}
	}()
	jerr := p.appendJournal(journalEntry{Kind: journalClaim, Binding: claim.Binding, Seq: claim.Seq, Digest: digest, Path: claim.Path}, true)
	pr := <-ready
	if jerr != nil || pr.err != nil {
		if pr.p != nil {
			pr.p.Discard()
		}
		return nil, cmp.Or(jerr, pr.err)
	}
	if err := pr.p.Commit(); err != nil {
		return nil, err
	}
	if err := lease.Check(); err != nil {
		// The claim is published whatever happened to the lease; say so.
		return nil, fmt.Errorf("allocate %s: the publication lease was lost while publishing the claim: %w", claim.Binding, err)
	}
	return &claimRecord{Claim: claim, Digest: digest, Events: map[string]*Event{}}, nil
}

// bindingLiveOr returns the binding_live refusal when the binding has
// become live since it was checked (a concurrent allocation of the same
// binding won: its worktree may be what err found at the path), else err.
func (p *Provider) bindingLiveOr(binding string, err error) error {
	if recs, rerr := p.readBinding(binding); rerr == nil {
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
	req := reservation.Request{Resource: "publication", Purpose: purpose, TTL: publicationTTL, Wait: 30 * time.Second}
	l, err := p.leases.Acquire(ctx, req)
	if errors.Is(err, reservation.ErrHeld) {
		// A publisher that died holding it is recovered once its death is
		// proven; then try once more.
		if _, rerr := p.leases.Recover(ctx, "publication"); rerr == nil {
			req.Wait = 0
			return p.leases.Acquire(ctx, req)
		}
	}
	return l, err
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
	if !rel.Overlapping() || (rel == pathid.BContainsA && c.AllowNested) {
		return nil
	}
	if rel == pathid.BContainsA && other.has(EventCreated) {
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
			if p.recoverDeadReservation(ctx, res) {
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
	return p.liveClaimsThrough(p.loadClaimsIndex)
}

// liveClaimsThrough is liveClaims with the claims index that index gives.
func (p *Provider) liveClaimsThrough(index func() map[string]*indexBinding) ([]*claimRecord, error) {
	inv, err := p.inventoryOf(p.readBindingsThrough(index))
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

// createWorktree runs git worktree add for a published claim and records
// the directory's identity. Any failure undoes what was made.
//
// populate, when set, fills the worktree, which git then creates without
// checking out any file (restore); a failure undoes the allocation, which
// removes only what populate wrote.
func (p *Provider) createWorktree(ctx context.Context, rec *claimRecord, populate func(context.Context, string) error) (*Workspace, error) {
	c := rec.Claim
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, made{})
	}
	reason := lockReason(rec)
	newBranch := !c.Checkout && !c.Detached
	var err error
	pinned := false
	var created *preparedEvent // written beside git's checkout, named after it
	switch {
	case populate == nil && c.Checkout && c.Restore == "":
		err = gitops.AddWorktree(p.withGitProgress(ctx), c.CommonDir, gitops.AddOptions{
			Path: c.Path, Mode: gitops.ExistingBranch, Branch: c.Branch, LockReason: reason,
		})
	case populate != nil || !newBranch:
		mode := gitops.NewBranch
		if c.Checkout {
			mode = gitops.ExistingBranch
		} else if c.Detached {
			mode = gitops.Detached
		}
		err = gitops.AddWorktree(ctx, c.CommonDir, gitops.AddOptions{
			Path: c.Path, Mode: mode, Branch: c.Branch, Commit: c.Base, LockReason: reason, NoCheckout: true,
		})
		if err == nil && populate != nil {
			if perr := populate(ctx, c.Path); perr != nil {
				return nil, p.undoAllocation(ctx, rec, perr, made{worktree: true, branch: newBranch})
			}
		}
	default:
		// The entry is pinned as soon as git has made it, and the created
		// event written (not yet named): with many worktrees, while git
		// checks the files out.
		err = gitops.AddWorktree(p.withGitProgress(ctx), c.CommonDir, gitops.AddOptions{
			Path: c.Path, Branch: c.Branch, Commit: c.Base, LockReason: reason,
			EntryMade: func() error {
				if err := pinEntry(rec); err != nil {
					return err
				}
				id, err := pathid.Lstat(c.Path)
				if err != nil {
					return err
				}
				created, err = p.prepareEvent(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base})
				return err
			},
		})
		pinned = err == nil
	}
	if err != nil && created != nil {
		created.discard()
	}
	if err != nil {
		// A branch or path git reports as existing is someone else's and
		// stays. Otherwise git may have got as far as creating the branch,
		// or even the worktree (a failing post-checkout hook): both are
		// this command's, since neither existed when the claim was made.
		m := made{worktree: true, branch: newBranch}
		if errors.Is(err, gitops.ErrBranchExists) || errors.Is(err, gitops.ErrPathExists) {
			m = made{}
		}
		return nil, p.undoAllocation(ctx, rec, err, m)
	}
	all := made{worktree: true, branch: newBranch}
	if pinned {
		// pinned with the add, the created event written
	} else if err := pinEntry(rec); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	} else if id, err := pathid.Lstat(c.Path); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	} else if created, err = p.prepareEvent(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if _, err := created.commit(); err != nil {
		return nil, p.undoAllocation(ctx, rec, err, all)
	}
	if err := fpAllocateCreated.Inject(); err != nil {
		return nil, err
	}
	return p.view(ctx, rec, false)
}

// pinEntry pins the admin entry of the worktree just created for rec with
// the claim digest (see adminentry.go), before the created event.
func pinEntry(rec *claimRecord) error {
	if err := fpAllocatePin.Inject(); err != nil {
		return err
	}
	dir, err := verifyRepository("allocate", rec)
	if err != nil {
		return err
	}
	return gitops.WriteEntryPin(dir, rec.Digest)
}

// made says what an allocation created before it failed.
type made struct{ worktree, branch bool }

// undoAllocation removes what a failed allocation made (the worktree it
// just created, the branch it just created at the base) and marks the
// claim failed, so the binding is free again. It never touches anything
// the allocation did not make. It returns cause, wrapped.
func (p *Provider) undoAllocation(ctx context.Context, rec *claimRecord, cause error, m made) error {
	// An interrupted allocation (Ctrl-C cancels ctx) is undone all the
	// same: the undo's git commands must run.
	ctx = context.WithoutCancel(ctx)
	c := rec.Claim
	var notes []string
	if !m.worktree {
		// nothing to remove
	} else if wts, err := gitops.ListWorktrees(ctx, c.CommonDir); err == nil {
		for _, w := range wts {
			ours := c.Detached && w.Detached || !c.Detached && w.Branch == "refs/heads/"+c.Branch ||
				// made detached and locked with this claim's reason, and
				// stopped before it was put on its branch (see gitops's
				// AddWorktree with many worktrees)
				w.Detached && w.Head == c.Base && w.Locked && w.LockReason == lockReason(rec)
			if (w.Path == c.Path || w.Path == c.PhysicalPath) && ours {
				// Created by this very allocation moments ago: nothing of
				// anyone else's can be in it yet.
				_ = gitops.UnlockWorktree(ctx, c.CommonDir, w.Path)
				if err := gitops.RemoveWorktree(ctx, c.CommonDir, w.Path, true); err != nil {
					notes = append(notes, "could not remove the new worktree: "+err.Error())
				}
			}
		}
	}
	if !m.branch {
		// not ours
	} else if err := gitops.DeleteRef(ctx, c.CommonDir, "refs/heads/"+c.Branch, c.Base); err != nil &&
		!errors.Is(err, gitops.ErrRefChanged) && !errors.Is(err, gitops.ErrUnknownRevision) {
		notes = append(notes, "could not delete branch "+c.Branch+": "+err.Error())
	}
	reason := cause.Error()
	if len(notes) > 0 {
		reason += " (" + strings.Join(notes, "; ") + ")"
	}
	if _, err := p.publishEvent(rec, Event{Kind: EventFailed, Reason: reason}); err != nil {
		notes = append(notes, "could not mark the claim failed: "+err.Error())
	}
	var pe *Error
	if errors.As(cause, &pe) {
		return cause
	}
	err := &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: cause}
	if errors.Is(cause, gitops.ErrBranchExists) && c.Checkout {
		err.Err, err.Reason = ErrBranchCheckedOut, cause.Error()
	} else if errors.Is(cause, gitops.ErrBranchExists) {
		err.Err, err.Reason = ErrBranchExists, cause.Error()
	} else if errors.Is(cause, gitops.ErrPathExists) {
		err.Err, err.Reason = ErrPathExists, cause.Error()
	}
	if len(notes) > 0 {
		err.Hint = strings.Join(notes, "; ")
	}
	return err
}

// resumeAllocation finishes, or reports, an allocation started with the
// same request id.
func (p *Provider) resumeAllocation(ctx context.Context, rec *claimRecord) (*Workspace, error) {
	c := rec.Claim
	switch {
	case rec.has(EventCreated):
		return p.view(ctx, rec, false)
	case rec.has(EventFailed):
		return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "request " + c.RequestID + " failed earlier: " + rec.Events[EventFailed].Reason,
			Hint:   "retry with a new request id"}
	}
	if live, why := procid.Judge(c.Allocator); live != procid.Dead {
		return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrBindingLive,
			Reason: "request " + c.RequestID + " is still being carried out (" + why + ")",
			Hint:   "wait for it to finish"}
	}
	// The allocator died between the claim and the created event.
	if c.Restore != "" {
		// A restore's worktree is filled from its salvage, which only the
		// restore itself does: it is not finished here. With nothing at
		// the path, the claim is marked failed (the binding is free again
		// and the salvage untouched); a restore may be run again.
		if _, err := os.Lstat(c.Path); errors.Is(err, os.ErrNotExist) {
			if _, err := p.publishEvent(rec, Event{Kind: EventFailed, Reason: "the restore was interrupted before its worktree was made"}); err != nil {
				return nil, err
			}
			return nil, &Error{Op: "restore", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
				Reason: "the restore of " + c.Restore + " was interrupted before its worktree was made",
				Hint:   "restore it again, with a new request id"}
		}
		return nil, &Error{Op: "restore", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
			Reason: "the restore of " + c.Restore + " was interrupted: " + c.Path + " may be partly filled",
			Hint:   "inspect it (the salvage " + c.Restore + " is untouched); if it holds nothing of yours, remove it with git worktree remove --force and run the restore again"}
	}
	wts, err := gitops.ListWorktrees(ctx, c.CommonDir)
	if err != nil {
		return nil, err
	}
	if changed, err := p.resumeStepsWorktree(ctx, rec, wts); err != nil {
		return nil, err
	} else if changed {
		if wts, err = gitops.ListWorktrees(ctx, c.CommonDir); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(c.Path); errors.Is(err, os.ErrNotExist) {
		// A branch the dead allocator's git created at the base, checked
		// out nowhere, is its own: remove it so the add can run again.
		// (Only allocation creates branches; restore claims returned above.)
		// A branch that existed before the claim (--checkout) is never
		// the allocator's: it is never deleted.
		inUse := c.Checkout || c.Detached
		for _, w := range wts {
			inUse = inUse || w.Branch == "refs/heads/"+c.Branch
		}
		if !inUse {
			if err := gitops.DeleteRef(ctx, c.CommonDir, "refs/heads/"+c.Branch, c.Base); err != nil &&
				!errors.Is(err, gitops.ErrUnknownRevision) && !errors.Is(err, gitops.ErrRefChanged) {
				return nil, err
			}
		}
		return p.createWorktree(ctx, rec, nil)
	}
	for _, w := range wts {
		if (w.Path == c.Path || w.Path == c.PhysicalPath) && w.Head == c.Base && w.Branch == "refs/heads/"+c.Branch && checkedOut(rec) {
			if err := pinEntry(rec); err != nil {
				return nil, err
			}
			id, err := pathid.Lstat(c.Path)
			if err != nil {
				return nil, err
			}
			if _, err := p.publishEvent(rec, Event{Kind: EventCreated, Dev: id.Dev, Ino: id.Ino, Head: c.Base}); err != nil {
				return nil, err
			}
			return p.view(ctx, rec, false)
		}
	}
	return nil, &Error{Op: "allocate", Binding: c.Binding, Path: c.Path, Err: ErrInterrupted,
		Reason: "the interrupted allocation left " + c.Path + " in a state majlis cannot verify",
		Hint:   "inspect it; if it holds nothing of yours, unlock and remove it (git worktree unlock, then git worktree remove --force) and retry with the same request id"}
}

// resumeStepsWorktree takes up the worktree that the many-worktrees add
// (gitops's AddWorktree with many worktrees) leaves when its allocator
// dies between making it and putting HEAD on the branch: at the claim's
// path, detached at the base, locked with this claim's own reason.
//   - Holding nothing but its .git file (the crash came before the
//     checkout wrote a file), nothing in it can be anyone's: it is
//     removed, and the allocation is made again.
//   - Checked out and clean (the crash came after the checkout), the add
//     is finished: the branch, HEAD on it, the hook, none of which touches
//     a file. git's own add, killed with majlis, finishes on its own.
//
// Anything else (a checkout cut short, files written since) is left as
// it is, and the retry refuses. It reports whether it changed anything.
func (p *Provider) resumeStepsWorktree(ctx context.Context, rec *claimRecord, wts []gitops.Worktree) (bool, error) {
	c := rec.Claim
	if c.Checkout || c.Detached {
		return false, nil // the steps make a new branch only
	}
	for _, w := range wts {
		if (w.Path != c.Path && w.Path != c.PhysicalPath) || !w.Detached || w.Head != c.Base ||
			!w.Locked || w.LockReason != lockReason(rec) {
			continue
		}
		if !onlyGitFile(w.Path) {
			st, err := gitops.ReadStatus(ctx, w.Path, gitops.StatusOptions{})
			if err != nil || !st.Detached || st.Head != c.Base || !st.Clean() {
				return false, nil
			}
			if err := gitops.FinishAddInSteps(ctx, c.CommonDir, w.Path, c.Branch, c.Base); err != nil {
				if errors.Is(err, gitops.ErrBranchExists) {
					return false, nil
				}
				return true, err
			}
			return true, nil
		}
		if err := gitops.UnlockWorktree(ctx, c.CommonDir, w.Path); err != nil {
			return false, err
		}
		if !onlyGitFile(w.Path) { // written to meanwhile: left, locked again
			_ = gitops.LockWorktree(ctx, c.CommonDir, w.Path, lockReason(rec))
			return false, nil
		}
		if err := gitops.RemoveWorktree(ctx, c.CommonDir, w.Path, true); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// onlyGitFile reports whether dir holds nothing but a regular file .git.
func onlyGitFile(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 1 && entries[0].Name() == ".git" && entries[0].Type().IsRegular()
}

// checkedOut reports whether the worktree of rec has an index: git
// writes it last, once the files are checked out (a checkout interrupted
// before has none, and its files may be partly written).
func checkedOut(rec *claimRecord) bool {
	dir, err := verifyRepository("allocate", rec)
	if err != nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, "index"))
	return err == nil && fi.Mode().IsRegular()
}

// normalizeIntent validates intent globs: repository-relative paths,
// literal or ending in /**, without . or .. components.
func normalizeIntent(in []string) ([]string, error) {
	out := []string{}
	for _, g := range in {
		lit, sub := strings.CutSuffix(g, "/**")
		if g == "**" {
			lit, sub = "", true
		}
		if lit != "" {
			if strings.HasPrefix(lit, "/") || strings.ContainsAny(lit, "*?[\\\x00") {
				return nil, fmt.Errorf("intent %q: use a repository-relative path, optionally ending in /**", g)
			}
			for _, part := range strings.Split(lit, "/") {
				if part == "" || part == "." || part == ".." {
					return nil, fmt.Errorf("intent %q: empty, '.' or '..' component", g)
				}
			}
		}
		if lit == "" && !sub {
			return nil, fmt.Errorf("intent %q is empty", g)
		}
		out = append(out, g)
	}
	return out, nil
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
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
