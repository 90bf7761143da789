package provider

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/gitops/salvage"
	"github.com/majlis-dev/majlis/wire"
)

// RestoreOptions describe a restore.
type RestoreOptions struct {
	Binding string
	// Salvage is n of refs/majlis/salvage/<binding>/<n>; 0 means the
	// latest.
	Salvage int
	// Path is where the new workspace goes (default: as allocate's); it
	// must not exist.
	Path string
	// Branch is a new branch to create at the salvage's HEAD. Without it,
	// the workspace gets what it had: its branch (created again if it is
	// gone, checked out as it is if it is still at that commit, refused if
	// it has moved), or a detached HEAD.
	Branch    string
	RequestID string
}

// RestoreResult is wire.RestoreResult: the result type is defined once, in the wire contract.
type RestoreResult = wire.RestoreResult

// Restore recreates a reclaimed workspace of binding from one of its
// salvages, as a new workspace (a new claim, allocated as allocate does,
// with the same checks). It never moves an existing branch and refuses a
// path that exists. See salvage.RestoreInto for what is put back.
func (p *Provider) Restore(ctx context.Context, o RestoreOptions) (*RestoreResult, error) {
	fail := func(err error, reason, hint string) error {
		return &Error{Op: "restore", Binding: o.Binding, Reason: reason, Hint: hint, Err: err}
	}
	if err := ValidBinding(o.Binding); err != nil {
		return nil, err
	}
	if o.Salvage < 0 {
		return nil, fail(ErrInvalidArgument, fmt.Sprintf("%d is not a salvage number", o.Salvage), "")
	}
	recs, err := p.records.Binding(o.Binding)
	if err != nil {
		return nil, err
	}
	// A retry of an earlier restore (same request id) goes on to
	// allocate, which finishes or reports it; anything else live refuses.
	var retry *claimRecord
	if o.RequestID != "" {
		if retry, err = p.records.RequestClaim(o.Binding, o.RequestID); err != nil {
			return nil, err
		}
	}
	if retry == nil {
		if err := restoreLiveError(o.Binding, recs); err != nil {
			return nil, err
		}
	}
	reader, err := gitops.OpenReader(ctx, p.reg.CommonDir)
	if err != nil {
		return nil, err
	}
	prefix := SalvagePrefix + o.Binding + "/"
	n, err := pickSalvage(ctx, reader, o.Binding, prefix, o.Salvage, fail)
	if err != nil {
		return nil, err
	}
	ref := prefix + strconv.Itoa(n)
	commit, layout, err := salvage.Read(ctx, p.reg.CommonDir, ref)
	if err != nil {
		if errors.Is(err, gitops.ErrUnknownRevision) || errors.As(err, new(*gitops.Error)) {
			return nil, err
		}
		return nil, fail(ErrMalformed, err.Error(), "inspect it with git log -1 "+ref)
	}
	if layout.Binding != "" && layout.Binding != o.Binding {
		return nil, fail(ErrMalformed, fmt.Sprintf("%s is a salvage of %s, not of %s", ref, layout.Binding, o.Binding),
			"inspect it with git log -1 "+ref+"; restore it as that binding's, or with plain git (workspaces.md)")
	}
	if layout.Head == "" {
		// Taken on an unborn branch (or on a branch deleted under the
		// workspace, which git then sees as unborn): restore_unborn.go.
		return p.restoreUnborn(ctx, o, reader, ref, commit, layout)
	}

	// What HEAD becomes.
	ao := AllocateOptions{Binding: o.Binding, Path: o.Path, Base: layout.Head, RequestID: o.RequestID, restore: ref}
	branch, err := restoreHead(ctx, reader, &ao, o, layout, recs, fail)
	if err != nil {
		return nil, err
	}
	var report salvage.RestoreReport
	ao.populate = func(ctx context.Context, path string) error {
		var err error
		report, err = salvage.RestoreInto(ctx, path, commit, layout)
		return err
	}
	ws, err := p.Allocate(ctx, ao)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Op == "allocate" {
			pe.Op = "restore"
		}
		return nil, err
	}
	res := &RestoreResult{Workspace: ws, SalvageRef: ref, Commit: commit, Layout: layout.Version, Head: layout.Head,
		Restored: nonNil(report.Restored), NotRestored: nonNil(report.NotRestored)}
	if branch != "" {
		res.Branch = &branch
	}
	if layout.Version >= 2 {
		kept, _ := reader.Refs(ctx, prefix+"modules/")
		if len(kept) > 0 {
			res.NotRestored = append(res.NotRestored, "submodules: not checked out; the history of the old workspace's submodules is under "+prefix+"modules/")
		}
	}
	return res, nil
}

// pickSalvage returns the number of binding's salvage under prefix to
// restore: want, or the newest when want is 0.
func pickSalvage(ctx context.Context, reader *gitops.Reader, binding, prefix string, want int, fail func(err error, reason, hint string) error) (int, error) {
	refs, err := reader.Refs(ctx, prefix)
	if err != nil {
		return 0, err
	}
	var nums []int
	for _, r := range refs {
		if n, err := strconv.Atoi(strings.TrimPrefix(r.Name, prefix)); err == nil && n > 0 && strconv.Itoa(n) == strings.TrimPrefix(r.Name, prefix) {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	n := want
	switch {
	case len(nums) == 0:
		return 0, fail(ErrNotFound, "no salvage of "+binding+" under "+prefix, "list them: git for-each-ref "+prefix)
	case n == 0:
		n = nums[len(nums)-1]
	case !containsInt(nums, n):
		return 0, fail(ErrNotFound, fmt.Sprintf("no salvage %s%d", prefix, n), "list them: git for-each-ref "+prefix)
	}
	return n, nil
}

// restoreHead sets what HEAD of the restored workspace becomes (ao's
// branch and mode): the branch asked for, new; detached where the
// salvage was; else the salvage's branch (or, for an earlier layout, the
// last claim's), taken as it is if still at the salvage's HEAD, made if
// gone, refused if it moved. It returns the branch, "" when detached.
func restoreHead(ctx context.Context, reader *gitops.Reader, ao *AllocateOptions, o RestoreOptions, layout salvage.Layout,
	recs []*claimRecord, fail func(err error, reason, hint string) error) (string, error) {
	switch {
	case o.Branch != "":
		ao.Branch, ao.mode = o.Branch, gitops.NewBranch
		return o.Branch, nil
	case layout.Version >= 2 && layout.Branch == "":
		ao.mode = gitops.Detached
		return "", nil
	}
	name := strings.TrimPrefix(layout.Branch, "refs/heads/")
	if layout.Version < 2 || !strings.HasPrefix(layout.Branch, "refs/heads/") {
		if len(recs) == 0 {
			return "", fail(ErrNotFound, "no claim of "+o.Binding+" names its branch", "name the branch to restore onto")
		}
		name = recs[len(recs)-1].Claim.Branch
	}
	if name == "" {
		ao.mode = gitops.Detached
		return "", nil
	}
	ao.Branch = name
	at, err := reader.ResolveCommit(ctx, "refs/heads/"+name)
	switch {
	case errors.Is(err, gitops.ErrUnknownRevision):
		ao.mode = gitops.NewBranch
	case err != nil:
		return "", err
	case at == layout.Head:
		ao.mode = gitops.ExistingBranch
	default:
		return "", fail(ErrBranchExists, fmt.Sprintf("branch %s has moved to %s since the salvage (which was on %s); majlis never moves a branch", name, at, layout.Head),
			"restore onto a new branch at "+layout.Head)
	}
	return name, nil
}

func containsInt(s []int, n int) bool {
	for _, v := range s {
		if v == n {
			return true
		}
	}
	return false
}
