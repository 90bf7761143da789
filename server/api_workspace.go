package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
)

func (a *api) allocate(ctx context.Context, q *wire.AllocateRequest) (*provider.AllocateResult, error) {
	path, err := absPath("path", q.Path, q.Cwd)
	if err != nil {
		return nil, err
	}
	if q.Ports < 0 {
		return nil, usage("ports %d is negative", q.Ports)
	}
	o := provider.AllocateOptions{Binding: q.Binding, Base: q.Base, Branch: q.Branch, CheckoutBranch: q.Checkout,
		Path: path, Intent: q.Intent, OwnerPID: q.OwnerPID, AllowNested: q.AllowNested, RequestID: q.RequestID, NoPool: q.NoPool}
	return a.s.p.AllocateWithPorts(ctx, o, q.Ports, q.Token)
}

func (a *api) list(ctx context.Context, q *wire.ListRequest) (*wire.WorkspacesResponse, error) {
	ws, err := a.s.p.List(ctx, provider.ListOptions{All: q.All, Look: true, Status: q.Status})
	if err != nil {
		return nil, err
	}
	if ws == nil {
		ws = []*provider.Workspace{}
	}
	return &wire.WorkspacesResponse{Workspaces: ws, Summary: provider.Summarize(ws)}, nil
}

func (a *api) show(ctx context.Context, q *wire.BindingRequest) (*wire.WorkspaceResponse, error) {
	ws, err := a.s.p.Show(ctx, q.Binding)
	if err != nil {
		return nil, err
	}
	return &wire.WorkspaceResponse{Workspace: ws}, nil
}

func (a *api) salvage(ctx context.Context, q *wire.SalvageRequest) (*wire.SalvageResponse, error) {
	res, err := a.s.p.Salvage(ctx, q.Binding, q.Message, q.RequestID)
	if err != nil {
		return nil, err
	}
	return &wire.SalvageResponse{Salvage: res}, nil
}

func (a *api) release(ctx context.Context, q *wire.ReleaseRequest) (*wire.WorkspaceResponse, error) {
	ws, err := a.s.p.Release(ctx, q.Binding, q.RequestID)
	if err != nil {
		return nil, err
	}
	return &wire.WorkspaceResponse{Workspace: ws}, nil
}

func (a *api) preview(ctx context.Context, q *wire.BindingRequest) (*wire.PreviewResponse, error) {
	pv, err := a.s.p.PreviewReclaim(ctx, q.Binding)
	if err != nil {
		return nil, err
	}
	return &wire.PreviewResponse{Preview: &pv.Preview}, nil
}

// reclaim carries out a reclaim confirmed by a preview's digest, or by
// yes. Without either it refuses as the CLI does without a terminal.
func (a *api) reclaim(ctx context.Context, q *wire.ReclaimRequest) (*wire.ReclaimResponse, error) {
	keep, err := duration("keep_trash", q.KeepTrash)
	if err != nil {
		return nil, err
	}
	if q.Confirm != "" {
		if err := provider.CheckDigest(q.Confirm); err != nil {
			return nil, usage("confirm: %v", err)
		}
	}
	if q.Confirm == "" && !q.Yes {
		return nil, &provider.Error{Op: "reclaim", Binding: q.Binding, Err: provider.ErrUnconfirmed,
			Reason: "neither the preview's digest (confirm) nor yes was given",
			Hint:   "ask for the preview ({tool:workspace_reclaim_preview}), check it, and send its digest as confirm"}
	}
	res, err := a.s.p.Reclaim(ctx, provider.ReclaimOptions{Binding: q.Binding, Confirm: q.Confirm, Yes: q.Yes,
		SalvageSubmodules: q.SalvageSubmodules, KeepTrash: keep, DeleteTrash: q.KeepTrash != "" && keep == 0, RequestID: q.RequestID})
	if err != nil {
		return nil, err
	}
	return &wire.ReclaimResponse{Reclaim: res}, nil
}

func (a *api) restore(ctx context.Context, q *wire.RestoreRequest) (*wire.RestoreResponse, error) {
	if q.FromTrash {
		if q.Salvage != 0 || q.Path != "" || q.Branch != "" {
			return nil, usage("from_trash takes none of salvage, path and branch")
		}
		ws, err := a.s.p.RestoreFromTrash(ctx, q.Binding, q.RequestID)
		if err != nil {
			return nil, err
		}
		return &wire.RestoreResponse{Workspace: ws}, nil
	}
	path, err := absPath("path", q.Path, q.Cwd)
	if err != nil {
		return nil, err
	}
	res, err := a.s.p.Restore(ctx, provider.RestoreOptions{Binding: q.Binding, Salvage: q.Salvage, Path: path,
		Branch: q.Branch, RequestID: q.RequestID})
	if err != nil {
		return nil, err
	}
	return &wire.RestoreResponse{Restore: res}, nil
}

func (a *api) recoverReservation(ctx context.Context, q *wire.ReleaseRequest) (*wire.RecoveredResponse, error) {
	rec, err := a.s.p.RecoverReservation(ctx, q.Binding, q.RequestID)
	if err != nil {
		return nil, err
	}
	return &wire.RecoveredResponse{Recovered: rec}, nil
}

func (a *api) begin(ctx context.Context, q *wire.BeginRequest) (*provider.BeginResult, error) {
	ttl, err := duration("ttl", q.TTL)
	if err != nil {
		return nil, err
	}
	if q.Checkout != "" && !q.Shared {
		return nil, usage("checkout is for a shared begin only")
	}
	p := a.s.p
	if q.Shared && q.Checkout != "" {
		if p, err = a.s.openAt(ctx, "checkout", q.Checkout); err != nil {
			return nil, err
		}
		defer p.Close()
	}
	return p.Begin(ctx, provider.BeginOptions{Task: q.Task, Paths: q.Paths, Base: q.Base, Shared: q.Shared, TTL: ttl,
		RequestID: q.RequestID, OwnerPID: q.OwnerPID, Token: q.Token, Ports: q.Ports, NoPool: q.NoPool})
}

// end finishes a task as 'majlis end' does (provider.End): its leases
// released, then its workspace; with reclaim, a clean workspace reclaimed.
func (a *api) end(ctx context.Context, q *wire.EndRequest) (*wire.EndResponse, error) {
	if q.Task == "" {
		return nil, usage("task is required")
	}
	res, err := a.s.p.End(ctx, provider.EndOptions{Binding: q.Task, Token: q.Token, Force: q.Force, Reclaim: q.Reclaim, RequestID: q.RequestID})
	if err != nil {
		return nil, err
	}
	a.s.beats.forget(q.Task)
	e := &wire.Ended{Binding: res.Binding, Leases: res.Leases, Workspace: res.Workspace, Reclaimed: res.Reclaimed}
	if res.Preview != nil {
		e.Preview = &res.Preview.Preview
	}
	if res.NotReclaimed != nil {
		r := a.refusal(res.NotReclaimed)
		e.NotReclaimed = &r
	}
	return &wire.EndResponse{End: e}, nil
}

// check compares the changed files of the checkout named by the request
// with its holder's leases (provider.CheckRepository, as 'majlis check').
func (a *api) check(ctx context.Context, q *wire.CheckRequest) (*provider.CheckResult, error) {
	if q.Checkout == "" {
		return nil, usage("checkout is required: the absolute directory of the checkout to check")
	}
	p, err := a.s.openAt(ctx, "checkout", q.Checkout)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Check(ctx, provider.CheckOptions{Holder: q.Holder, IfHolder: q.IfHolder})
}

// openAt opens the provider of the checkout containing dir, which must be
// a worktree of the server's repository: the server never acts on
// another repository.
func (s *srv) openAt(ctx context.Context, name, dir string) (*provider.Provider, error) {
	abs, err := absPath(name, dir, "")
	if err != nil {
		return nil, err
	}
	p, err := provider.Open(ctx, abs, s.o.Provider)
	if errors.Is(err, provider.ErrNotInitialized) {
		// Every worktree of the server's repository shares its
		// registration: one that is not registered is another repository.
		return nil, &provider.Error{Op: "open", Path: abs, Err: provider.ErrRepository,
			Reason: fmt.Sprintf("%s belongs to another repository (not registered with majlis), this server serves %s", abs, s.p.Repository().ID),
			Hint:   "name a directory inside a worktree of the server's repository"}
	}
	if err != nil {
		return nil, err
	}
	if p.Repository().ID != s.p.Repository().ID {
		p.Close()
		return nil, &provider.Error{Op: "open", Path: abs, Err: provider.ErrRepository,
			Reason: fmt.Sprintf("%s belongs to repository %s, this server serves %s", abs, p.Repository().ID, s.p.Repository().ID),
			Hint:   "ask that repository's server"}
	}
	return p, nil
}
