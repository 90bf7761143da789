package server

import (
	"context"
	"path/filepath"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/wire"
)

// acquire grants the leases as 'majlis lease acquire'. The CLI takes the
// checkout and relative paths from its working directory; a request
// names them (checkout, cwd), and without either the server's own
// worktree is the checkout.
func (a *api) acquire(ctx context.Context, q *wire.AcquireRequest) (*admission.AcquireResult, error) {
	ttl, err := duration("ttl", q.TTL)
	if err != nil {
		return nil, err
	}
	checkout, err := absPath("checkout", q.Checkout, q.Cwd)
	if err != nil {
		return nil, err
	}
	if q.Cwd != "" && !filepath.IsAbs(q.Cwd) {
		return nil, usage("cwd %q is not absolute", q.Cwd)
	}
	cwd := q.Cwd
	if checkout == "" && cwd == "" {
		checkout, cwd = a.s.p.Worktree(), a.s.p.Worktree()
	}
	return a.s.adm.Acquire(ctx, admission.AcquireRequest{Holder: q.Holder, TTL: ttl, Resources: q.Resources,
		Checkout: checkout, Cwd: cwd, RequestID: q.RequestID, OwnerPID: q.OwnerPID, Token: q.Token})
}

func (a *api) renew(ctx context.Context, q *wire.RenewRequest) (*admission.RenewResult, error) {
	ttl, err := duration("ttl", q.TTL)
	if err != nil {
		return nil, err
	}
	return a.s.adm.Renew(ctx, admission.RenewRequest{Holder: q.Holder, TTL: ttl, IDs: q.IDs, RequestID: q.RequestID,
		Token: q.Token, Force: q.Force})
}

func (a *api) releaseLeases(ctx context.Context, q *wire.LeaseReleaseRequest) (*admission.ReleaseResult, error) {
	res, err := a.s.adm.Release(ctx, admission.ReleaseRequest{Holder: q.Holder, IDs: q.IDs, RequestID: q.RequestID,
		Token: q.Token, Force: q.Force})
	if err == nil && len(q.IDs) == 0 {
		a.s.beats.forget(q.Holder)
	}
	return res, err
}

func (a *api) leases(ctx context.Context, q *wire.LeaseListRequest) (*wire.LeasesResponse, error) {
	ls, err := a.s.adm.List(ctx, admission.ListRequest{Holder: q.Holder, All: q.All})
	if err != nil {
		return nil, err
	}
	if ls == nil {
		ls = []admission.Lease{}
	}
	return &wire.LeasesResponse{Leases: ls}, nil
}

func (a *api) resolve(ctx context.Context, q *wire.ResolveRequest) (*wire.LeaseResponse, error) {
	l, err := a.s.adm.Resolve(ctx, admission.ResolveRequest{ID: q.ID, WriterStopped: q.WriterStopped, RequestID: q.RequestID})
	if err != nil {
		return nil, err
	}
	return &wire.LeaseResponse{Lease: l}, nil
}
