package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
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
// records (records_compact.go), so that what reads every binding reads less.
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
	all, err := p.records.All()
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
