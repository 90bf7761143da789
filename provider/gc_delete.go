package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/majlis-dev/majlis/gitops"
)

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
	if err := p.deleteBranches(ctx, plan.Branches, res, skip); err != nil {
		return nil, err
	}
	if err := p.deleteRefs(ctx, plan, res, skip); err != nil {
		return nil, err
	}
	if err := p.purgeTrash(ctx, plan.Trash, res, skip); err != nil {
		return nil, err
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

// deleteBranches deletes the branches of the plan, each only while no
// workspace uses it and no worktree has it checked out, its tip kept
// under DeletedPrefix first; one taken meanwhile is put back.
func (p *Provider) deleteBranches(ctx context.Context, branches []GCBranch, res *GCResult, skip func(what, binding, reason string)) error {
	dir := p.reg.CommonDir
	for _, b := range branches {
		if err := ctx.Err(); err != nil {
			return err
		}
		if why, err := p.branchInUse(ctx, b.Branch); err != nil {
			return err
		} else if why != "" {
			skip(b.Branch, b.Binding, why)
			continue
		}
		if err := fpGCChecked.Inject(); err != nil {
			return err
		}
		kept := fmt.Sprintf("%s%s/%d", DeletedPrefix, b.Branch, p.now().Unix())
		if err := gitops.UpdateRefCreate(ctx, dir, kept, b.Tip); err != nil {
			if errors.Is(err, gitops.ErrRefExists) {
				skip(b.Branch, b.Binding, "its tip could not be kept: "+kept+" exists")
				continue
			}
			return err
		}
		if err := gitops.DeleteRef(ctx, dir, "refs/heads/"+b.Branch, b.Tip); err != nil {
			_ = gitops.DeleteRef(context.WithoutCancel(ctx), dir, kept, b.Tip)
			if errors.Is(err, gitops.ErrRefChanged) {
				skip(b.Branch, b.Binding, "its tip moved since the preview")
				continue
			}
			return err
		}
		// A workspace or worktree that took the branch between the check
		// and the deletion gets it back, at the same tip.
		if why, err := p.branchInUse(context.WithoutCancel(ctx), b.Branch); err != nil || why != "" {
			if rerr := gitops.UpdateRefCreate(context.WithoutCancel(ctx), dir, "refs/heads/"+b.Branch, b.Tip); rerr != nil {
				return rerr
			}
			_ = gitops.DeleteRef(context.WithoutCancel(ctx), dir, kept, b.Tip)
			if err != nil {
				return err
			}
			skip(b.Branch, b.Binding, why+" (it was put back)")
			continue
		}
		b.KeptAs = kept
		res.Branches = append(res.Branches, b)
	}
	return nil
}

// deleteRefs deletes the salvage refs and kept tips of the plan, each at the
// value the preview showed.
func (p *Provider) deleteRefs(ctx context.Context, plan *GCPlan, res *GCResult, skip func(what, binding, reason string)) error {
	for _, list := range []struct {
		refs []GCRef
		done *[]GCRef
	}{{plan.SalvageRefs, &res.SalvageRefs}, {plan.DeletedTips, &res.DeletedTips}} {
		for _, r := range list.refs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := gitops.DeleteRef(ctx, p.reg.CommonDir, r.Ref, r.Commit); err != nil {
				if errors.Is(err, gitops.ErrRefChanged) {
					skip(r.Ref, r.Binding, "it changed since the preview")
					continue
				}
				return err
			}
			*list.done = append(*list.done, r)
		}
	}
	return nil
}

// purgeTrash purges the kept trash of the plan (purgeKept: salvage
// first); one purged or restored since the preview, or that fails, is
// skipped.
func (p *Provider) purgeTrash(ctx context.Context, trash []GCTrash, res *GCResult, skip func(what, binding, reason string)) error {
	for _, t := range trash {
		if _, err := p.purgeKept(ctx, t.Binding, t.Seq, t.Due); err != nil {
			if ctx.Err() != nil {
				return err
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
	return nil
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
	all, err := p.records.All()
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
