package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/failpoint"
)

// gc: what majlis left behind and no longer needs, deleted only after a
// preview whose digest the caller confirms, each deletion checked against
// what the preview saw (a ref is deleted only at the value the preview
// showed). Everything it would delete is in the preview. It deletes:
//
//   - branches majlis created, whose workspaces are all reclaimed, that no
//     worktree has checked out, and that are merged into the base they
//     were allocated from or into the upstream they track
//     (gitops.MergedInto: merged, fast-forwarded, or squash-merged by tree
//     or patch-id; a doubt keeps the branch). Each
//     tip is kept under refs/majlis/deleted/<branch>/<unix time> first:
//     deleting a branch deletes its reflog too;
//   - salvage refs identical (tree and parents) to another salvage of the
//     same binding that no record names;
//   - salvage refs older than the salvage age whose workspaces are gone,
//     but the newest of each binding;
//   - kept tips under refs/majlis/deleted/ older than the deleted age;
//   - trash folders that reclaims kept (--keep-trash) past their time.
//
// And it compacts records: a finished workspace's claim and events older
// than the record age move out of the claims folder into the compacted
// records (compact.go), so that what reads every binding reads less.
//
// It never deletes a branch majlis did not create (allocate --checkout,
// restore onto an existing branch), nor one a live workspace uses.

// gc/checked: a branch found unused, not yet deleted (tests take it then).
var fpGCChecked = failpoint.New("gc/checked")

// DeletedPrefix holds the tips of the branches gc deleted.
const DeletedPrefix = "refs/majlis/deleted/"

// Default ages of gc.
const (
	DefaultSalvageAge = 30 * 24 * time.Hour
	DefaultDeletedAge = 30 * 24 * time.Hour
)

// GCOptions describe a gc.
type GCOptions struct {
	// Confirm is the digest of the preview the user saw; empty: preview
	// only.
	Confirm string
	// SalvageAge: salvage refs of gone workspaces older than this are
	// pruned (the newest of each binding is kept). Zero: DefaultSalvageAge.
	SalvageAge time.Duration
	// DeletedAge: kept tips of deleted branches older than this go. Zero:
	// DefaultDeletedAge.
	DeletedAge time.Duration
	// RecordAge: records of workspaces reclaimed (or allocations failed)
	// longer ago than this are compacted. Zero: DefaultRecordAge.
	RecordAge time.Duration
}

// A GCBranch is a branch gc deletes, keeping its tip.
type GCBranch struct {
	Branch  string `json:"branch"`
	Tip     string `json:"tip"`
	Binding string `json:"binding"`
	Into    string `json:"into"` // the base it is merged into, as allocate named it, or its upstream
	How     string `json:"how"`  // ancestor, tree or patch-id (gitops.Merged*)
	// KeptAs is where the tip is kept: DeletedPrefix<branch>/<unix time>
	// (in a preview, without the time).
	KeptAs string `json:"kept_as"`
}

// A GCKept is a branch majlis created that gc keeps, and why.
type GCKept struct {
	Branch  string `json:"branch"`
	Binding string `json:"binding"`
	Reason  string `json:"reason"`
}

// A GCRef is a ref gc deletes, and why.
type GCRef struct {
	Ref     string `json:"ref"`
	Commit  string `json:"commit"`
	Binding string `json:"binding,omitempty"`
	Reason  string `json:"reason"`
}

// A GCTrash is a kept trash folder gc deletes (after salvaging what
// changed in it, purge.go), and why (a Due* word).
type GCTrash struct {
	Binding   string    `json:"binding"`
	Seq       int       `json:"seq"`
	Path      string    `json:"path"`
	KeptUntil time.Time `json:"kept_until"`
	Due       string    `json:"due"`
}

// A GCPlan is what gc would delete; its digest pins it.
type GCPlan struct {
	Digest       string     `json:"digest"`
	Branches     []GCBranch `json:"branches"`
	BranchesKept []GCKept   `json:"branches_kept"`
	SalvageRefs  []GCRef    `json:"salvage_refs"`
	DeletedTips  []GCRef    `json:"deleted_tips"`
	Trash        []GCTrash  `json:"trash"`
	// TrashKept lists every kept trash folder, due or not, with its age
	// and size (not covered by the digest: ages change by the second).
	TrashKept []KeptTrash `json:"trash_kept"`
	// Records are the records gc compacts, by binding and number.
	Records    []GCRecord `json:"records"`
	SalvageAge string     `json:"salvage_age"`
	DeletedAge string     `json:"deleted_age"`
	RecordAge  string     `json:"record_age"`
}

// A GCResult is what gc did; Skipped lists what it left because it had
// changed since the preview (and why).
type GCResult struct {
	Digest      string     `json:"digest"`
	Branches    []GCBranch `json:"branches"`
	SalvageRefs []GCRef    `json:"salvage_refs"`
	DeletedTips []GCRef    `json:"deleted_tips"`
	Trash       []GCTrash  `json:"trash"`
	Records     []GCRecord `json:"records"`
	Skipped     []GCKept   `json:"skipped"`
}

func (o *GCOptions) defaults() {
	if o.SalvageAge <= 0 {
		o.SalvageAge = DefaultSalvageAge
	}
	if o.DeletedAge <= 0 {
		o.DeletedAge = DefaultDeletedAge
	}
	if o.RecordAge <= 0 {
		o.RecordAge = DefaultRecordAge
	}
}

// PreviewGC computes what GC would delete, changing nothing.
func (p *Provider) PreviewGC(ctx context.Context, o GCOptions) (*GCPlan, error) {
	o.defaults()
	all, err := p.readAllBindings()
	if err != nil {
		return nil, err
	}
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	plan := &GCPlan{Branches: []GCBranch{}, BranchesKept: []GCKept{}, SalvageRefs: []GCRef{}, DeletedTips: []GCRef{},
		Trash: []GCTrash{}, Records: []GCRecord{}, SalvageAge: o.SalvageAge.String(), DeletedAge: o.DeletedAge.String(),
		RecordAge: o.RecordAge.String()}
	if err := p.gcBranches(ctx, reader, all, plan); err != nil {
		return nil, err
	}
	if err := p.gcSalvage(ctx, reader, all, o.SalvageAge, plan); err != nil {
		return nil, err
	}
	if err := p.gcDeleted(ctx, reader, o.DeletedAge, plan); err != nil {
		return nil, err
	}
	tp, err := p.TrashPolicy()
	if err != nil {
		return nil, err
	}
	kept := p.keptTrash(all, tp, sizesMeasured)
	for _, k := range kept {
		if k.Due != "" {
			plan.Trash = append(plan.Trash, GCTrash{Binding: k.Binding, Seq: k.Seq, Path: k.Path, KeptUntil: k.KeptUntil, Due: k.Due})
		}
	}
	if err := p.gcRecords(ctx, reader, all, o.RecordAge, plan); err != nil {
		return nil, err
	}
	h := sha256.New()
	json.NewEncoder(h).Encode(plan)
	plan.Digest = "sha256:" + hex.EncodeToString(h.Sum(nil))
	plan.TrashKept = kept
	return plan, nil
}

// gcBranches finds the branches majlis created that may go.
func (p *Provider) gcBranches(ctx context.Context, reader *gitops.Reader, all [][]*claimRecord, plan *GCPlan) error {
	created := map[string]*claimRecord{} // branch -> the latest claim that created it
	inUse := map[string]string{}         // branch -> a live workspace's binding
	for _, recs := range all {
		for _, r := range recs {
			c := r.Claim
			if c.Branch == "" || r.has(EventFailed) {
				continue
			}
			if r.live() {
				inUse[c.Branch] = c.Binding
			}
			if !c.Checkout && !c.Detached {
				if prev := created[c.Branch]; prev == nil || prev.Claim.CreatedAt.Before(c.CreatedAt) {
					created[c.Branch] = r
				}
			}
		}
	}
	if len(created) == 0 {
		return nil
	}
	heads, err := reader.Refs(ctx, "refs/heads/")
	if err != nil {
		return err
	}
	tips := map[string]string{}
	for _, h := range heads {
		tips[strings.TrimPrefix(h.Name, "refs/heads/")] = h.ID
	}
	wts, err := gitops.ListWorktrees(ctx, p.reg.CommonDir)
	if err != nil {
		return err
	}
	checkedOut := map[string]string{}
	for _, w := range wts {
		if w.Branch != "" {
			checkedOut[strings.TrimPrefix(w.Branch, "refs/heads/")] = w.Path
		}
	}
	names := make([]string, 0, len(created))
	for b := range created {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
		r := created[b]
		tip, ok := tips[b]
		if !ok {
			continue // deleted already
		}
		keep := func(reason string) {
			plan.BranchesKept = append(plan.BranchesKept, GCKept{Branch: b, Binding: r.Claim.Binding, Reason: reason})
		}
		if who := inUse[b]; who != "" {
			keep("workspace " + who + " uses it")
			continue
		}
		if path := checkedOut[b]; path != "" {
			keep("checked out at " + path)
			continue
		}
		into := r.Claim.BaseRef
		if into == "" {
			into = r.Claim.Base
		}
		how, merged, why, err := p.gcMerged(ctx, reader, b, tip, into)
		if err != nil {
			return err
		}
		if how == "" {
			keep(why)
			continue
		}
		into = merged
		plan.Branches = append(plan.Branches, GCBranch{Branch: b, Tip: tip, Binding: r.Claim.Binding, Into: into, How: how,
			KeptAs: DeletedPrefix + b + "/"})
	}
	return nil
}

// gcMerged tells whether branch b (at tip) is merged into base, the base
// it was allocated from, or else into the upstream it tracks: how (a
// gitops.Merged* word) and into which, or "" and why it is kept. Each is
// judged by gitops.MergedInto; one that cannot be resolved now is no
// evidence (a doubt keeps the branch).
func (p *Provider) gcMerged(ctx context.Context, reader *gitops.Reader, b, tip, base string) (how, into, why string, err error) {
	var doubts []string
	if target, rerr := reader.ResolveCommit(ctx, base); rerr != nil {
		doubts = append(doubts, fmt.Sprintf("its base %q cannot be resolved now", base))
	} else if how, err = reader.MergedInto(ctx, tip, target); err != nil || how != "" {
		return how, base, "", err
	} else {
		doubts = append(doubts, "not merged into "+base)
	}
	up, err := reader.Upstream(ctx, b)
	if err != nil {
		return "", "", "", err
	}
	if up != "" {
		name := strings.TrimPrefix(strings.TrimPrefix(up, "refs/remotes/"), "refs/heads/")
		if target, rerr := reader.ResolveCommit(ctx, up); rerr != nil {
			doubts = append(doubts, fmt.Sprintf("its upstream %q cannot be resolved now", name))
		} else if how, err = reader.MergedInto(ctx, tip, target); err != nil || how != "" {
			return how, name, "", err
		} else {
			doubts = append(doubts, "nor into its upstream "+name)
		}
	}
	return "", "", strings.Join(doubts, "; "), nil
}

// salvageNumber returns n of refs/majlis/salvage/<binding>/<n>, or false
// for other refs there (submodule refs).
func salvageNumber(ref string) (binding string, n int, ok bool) {
	rest := strings.TrimPrefix(ref, SalvagePrefix)
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || strings.Contains(rest[:i], "/") {
		return "", 0, false
	}
	return rest[:i], n, true
}

// gcSalvage finds the salvage refs that may go: duplicates no record
// names, and old ones of gone workspaces but the newest of each.
func (p *Provider) gcSalvage(ctx context.Context, reader *gitops.Reader, all [][]*claimRecord, age time.Duration, plan *GCPlan) error {
	refs, err := reader.RefCommits(ctx, SalvagePrefix)
	if err != nil {
		return err
	}
	named := map[string]bool{}
	live := map[string]bool{}
	for _, recs := range all {
		for _, r := range recs {
			if r.Claim.Restore != "" {
				named[r.Claim.Restore] = true
			}
			for _, ev := range r.Events {
				if ev != nil && ev.SalvageRef != "" {
					named[ev.SalvageRef] = true
				}
			}
			if r.live() {
				live[r.Claim.Binding] = true
			}
		}
	}
	type numbered struct {
		gitops.RefCommit
		n int
	}
	byBinding := map[string][]numbered{}
	for _, rc := range refs {
		if b, n, ok := salvageNumber(rc.Name); ok {
			byBinding[b] = append(byBinding[b], numbered{rc, n})
		}
	}
	bindings := make([]string, 0, len(byBinding))
	for b := range byBinding {
		bindings = append(bindings, b)
	}
	sort.Strings(bindings)
	// Two salvages of the same state differ only in the dates of the
	// commits the salvage made beside its own (the index commit, the meta
	// commit): each parent is compared by its own tree and parents.
	var parents []string
	for _, rc := range refs {
		parents = append(parents, rc.Parents...)
	}
	shapes, err := reader.CommitShapes(ctx, parents)
	if err != nil {
		return err
	}
	identity := func(rc gitops.RefCommit) string {
		key := rc.Tree
		for _, par := range rc.Parents {
			sh, ok := shapes[par]
			if !ok {
				return rc.ID // unknown: identical to nothing else
			}
			key += " " + sh.Tree + ":" + strings.Join(sh.Parents, ",")
		}
		return key
	}
	now := p.now()
	for _, b := range bindings {
		list := byBinding[b]
		sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
		gone := map[string]bool{}
		// Duplicates: the same tree and parents.
		groups := map[string][]numbered{}
		var order []string
		for _, s := range list {
			key := identity(s.RefCommit)
			if _, seen := groups[key]; !seen {
				order = append(order, key)
			}
			groups[key] = append(groups[key], s)
		}
		for _, key := range order {
			g := groups[key]
			if len(g) < 2 {
				continue
			}
			keeper := ""
			for _, s := range g {
				if named[s.Name] {
					keeper = s.Name
					break
				}
			}
			if keeper == "" {
				keeper = g[0].Name
			}
			for _, s := range g {
				if s.Name == keeper || named[s.Name] {
					continue
				}
				gone[s.Name] = true
				plan.SalvageRefs = append(plan.SalvageRefs, GCRef{Ref: s.Name, Commit: s.ID, Binding: b,
					Reason: "identical (tree and parents) to " + keeper})
			}
		}
		// Old ones of a gone workspace, but the newest.
		if live[b] {
			continue
		}
		for _, s := range list[:len(list)-1] {
			if gone[s.Name] || now.Sub(s.When) < age {
				continue
			}
			plan.SalvageRefs = append(plan.SalvageRefs, GCRef{Ref: s.Name, Commit: s.ID, Binding: b,
				Reason: fmt.Sprintf("older than %s, its workspace gone, not the newest (%s is kept)", age, list[len(list)-1].Name)})
		}
	}
	return nil
}

// gcDeleted finds the kept tips of deleted branches older than age.
func (p *Provider) gcDeleted(ctx context.Context, reader *gitops.Reader, age time.Duration, plan *GCPlan) error {
	refs, err := reader.Refs(ctx, DeletedPrefix)
	if err != nil {
		return err
	}
	now := p.now()
	for _, r := range refs {
		i := strings.LastIndexByte(r.Name, '/')
		sec, err := strconv.ParseInt(r.Name[i+1:], 10, 64)
		if err != nil {
			continue // not gc's
		}
		if at := time.Unix(sec, 0); now.Sub(at) >= age {
			plan.DeletedTips = append(plan.DeletedTips, GCRef{Ref: r.Name, Commit: r.ID,
				Reason: fmt.Sprintf("kept since %s, longer than %s", at.UTC().Format(time.RFC3339), age)})
		}
	}
	return nil
}

// GC deletes exactly what the preview with digest o.Confirm listed. Each
// ref is deleted only at the value the preview showed, and a branch only
// while no workspace uses it and no worktree has it checked out, checked
// again just before; what changed meanwhile is skipped and reported.
func (p *Provider) GC(ctx context.Context, o GCOptions) (*GCResult, error) {
	if err := CheckDigest(o.Confirm); err != nil {
		return nil, err
	}
	plan, err := p.PreviewGC(ctx, o)
	if err != nil {
		return nil, err
	}
	if plan.Digest != o.Confirm {
		return nil, &Error{Op: "gc", Err: ErrPreviewStale,
			Reason:  fmt.Sprintf("what gc would delete changed since the preview %s; it is now %s", shortDigest(o.Confirm), plan.Digest),
			Hint:    "preview again and confirm the new digest",
			Details: map[string]any{"confirmed": o.Confirm, "digest": plan.Digest}}
	}
	res := &GCResult{Digest: plan.Digest, Branches: []GCBranch{}, SalvageRefs: []GCRef{}, DeletedTips: []GCRef{},
		Trash: []GCTrash{}, Records: []GCRecord{}, Skipped: []GCKept{}}
	skip := func(what, binding, reason string) {
		res.Skipped = append(res.Skipped, GCKept{Branch: what, Binding: binding, Reason: reason})
	}
	dir := p.reg.CommonDir
	for _, b := range plan.Branches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if why, err := p.branchInUse(ctx, b.Branch); err != nil {
			return nil, err
		} else if why != "" {
			skip(b.Branch, b.Binding, why)
			continue
		}
		if err := fpGCChecked.Inject(); err != nil {
			return nil, err
		}
		kept := fmt.Sprintf("%s%s/%d", DeletedPrefix, b.Branch, p.now().Unix())
		if err := gitops.UpdateRefCreate(ctx, dir, kept, b.Tip); err != nil {
			if errors.Is(err, gitops.ErrRefExists) {
				skip(b.Branch, b.Binding, "its tip could not be kept: "+kept+" exists")
				continue
			}
			return nil, err
		}
		if err := gitops.DeleteRef(ctx, dir, "refs/heads/"+b.Branch, b.Tip); err != nil {
			_ = gitops.DeleteRef(context.WithoutCancel(ctx), dir, kept, b.Tip)
			if errors.Is(err, gitops.ErrRefChanged) {
				skip(b.Branch, b.Binding, "its tip moved since the preview")
				continue
			}
			return nil, err
		}
		// A workspace or worktree that took the branch between the check
		// and the deletion gets it back, at the same tip.
		if why, err := p.branchInUse(context.WithoutCancel(ctx), b.Branch); err != nil || why != "" {
			if rerr := gitops.UpdateRefCreate(context.WithoutCancel(ctx), dir, "refs/heads/"+b.Branch, b.Tip); rerr != nil {
				return nil, rerr
			}
			_ = gitops.DeleteRef(context.WithoutCancel(ctx), dir, kept, b.Tip)
			if err != nil {
				return nil, err
			}
			skip(b.Branch, b.Binding, why+" (it was put back)")
			continue
		}
		b.KeptAs = kept
		res.Branches = append(res.Branches, b)
	}
	for _, list := range []struct {
		refs []GCRef
		done *[]GCRef
	}{{plan.SalvageRefs, &res.SalvageRefs}, {plan.DeletedTips, &res.DeletedTips}} {
		for _, r := range list.refs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := gitops.DeleteRef(ctx, dir, r.Ref, r.Commit); err != nil {
				if errors.Is(err, gitops.ErrRefChanged) {
					skip(r.Ref, r.Binding, "it changed since the preview")
					continue
				}
				return nil, err
			}
			*list.done = append(*list.done, r)
		}
	}
	for _, t := range plan.Trash {
		if _, err := p.purgeKept(ctx, t.Binding, t.Seq, t.Due); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			if errors.Is(err, errPurgeGone) {
				skip(t.Path, t.Binding, "purged or restored since the preview")
			} else {
				skip(t.Path, t.Binding, err.Error())
			}
			continue
		}
		res.Trash = append(res.Trash, t)
	}
	// Records last: a record is compacted only once its trash is gone.
	if err := p.finishCompactions(ctx); err != nil {
		return nil, err
	}
	if err := p.compactRecords(ctx, plan.Records, res, skip); err != nil {
		return nil, err
	}
	if len(res.Records) > 0 {
		if err := p.compactJournal(ctx); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// compactRecords compacts the records of the plan, binding by binding,
// each checked again first (compactBinding); what changed is skipped.
func (p *Provider) compactRecords(ctx context.Context, planned []GCRecord, res *GCResult, skip func(what, binding, reason string)) error {
	var order []string
	want := map[string]map[int]string{}
	for _, r := range planned {
		if want[r.Binding] == nil {
			order = append(order, r.Binding)
			want[r.Binding] = map[int]string{}
		}
		want[r.Binding][r.Seq] = r.ClaimDigest
	}
	for _, b := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, why, err := p.compactBinding(ctx, b, want[b])
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// As a trash folder that cannot be purged: said, and the
			// other bindings go on (the binding's folder is whole either
			// way; the next gc finishes a compaction it began).
			skip("records of "+b, b, "they stay: "+err.Error())
			continue
		}
		if why != "" {
			skip("records of "+b, b, why)
			continue
		}
		for _, r := range planned {
			if r.Binding == b && slices.Contains(done, r.Seq) {
				res.Records = append(res.Records, r)
			}
		}
	}
	return nil
}

// branchInUse says why branch may not be deleted now: a live workspace's
// claim names it, or a worktree has it checked out ("" when neither).
func (p *Provider) branchInUse(ctx context.Context, branch string) (string, error) {
	all, err := p.readAllBindings()
	if err != nil {
		return "", err
	}
	for _, recs := range all {
		for _, r := range recs {
			if r.Claim.Branch == branch && r.live() && !r.has(EventFailed) {
				return "workspace " + r.Claim.Binding + " uses it now", nil
			}
		}
	}
	wts, err := gitops.ListWorktrees(ctx, p.reg.CommonDir)
	if err != nil {
		return "", err
	}
	for _, w := range wts {
		if w.Branch == "refs/heads/"+branch {
			return "checked out at " + w.Path + " now", nil
		}
	}
	return "", nil
}
