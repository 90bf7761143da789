package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/majlis-dev/majlis/admission"
)

// EndOptions describe the end of a task.
type EndOptions struct {
	Binding string
	// Token and Force are those of a lease release: the task's lease
	// token (leases granted with one are released only with it), or
	// release without it, recorded.
	Token string
	Force bool
	// Reclaim previews the workspace once released and reclaims it when
	// it is clean (nothing to salvage); otherwise it is left, and the
	// result says why.
	Reclaim   bool
	RequestID string
}

// An EndResult reports the end of a task.
type EndResult struct {
	Binding   string            `json:"binding"`
	Leases    []admission.Lease `json:"leases"`    // released now
	Workspace *Workspace        `json:"workspace"` // nil: the task has no workspace
	// Reclaimed is set by --reclaim when the workspace was reclaimed;
	// otherwise NotReclaimed says why it was left (with the preview, when
	// one could be made).
	Reclaimed    *ReclaimResult `json:"reclaimed,omitempty"`
	Preview      *Preview       `json:"preview,omitempty"`
	NotReclaimed error          `json:"-"`
}

// End finishes the task of o.Binding in one call: it releases every lease
// the task holds (as lease release --holder BINDING does), then releases
// its workspace (its files stay). With o.Reclaim it then previews the
// workspace and reclaims it, confirmed with that preview's digest, when
// the preview finds nothing to salvage; a workspace with work in it, or
// one a reclaim refuses, is left and the result says why. Ending a task
// whose workspace is released already is harmless.
//
// A task without a workspace (begun Shared, or whose workspace was
// reclaimed) ends too: its leases are released and the result's
// Workspace is nil; o.Reclaim has nothing to do. Only a task that has
// neither a workspace nor any lease, active or past, is not found
// (ErrNotFound), and then nothing changes.
func (p *Provider) End(ctx context.Context, o EndOptions) (*EndResult, error) {
	_, err := p.current("end", o.Binding)
	noWorkspace := errors.Is(err, ErrNotFound)
	if err != nil && !noWorkspace {
		return nil, err
	}
	svc, aerr := p.admission(ctx)
	if aerr != nil {
		return nil, aerr
	}
	if noWorkspace {
		held, lerr := svc.List(ctx, admission.ListRequest{Holder: o.Binding, All: true})
		if lerr != nil {
			return nil, lerr
		}
		if len(held) == 0 {
			var pe *Error
			if errors.As(err, &pe) && pe.Reason == "" {
				pe.Reason = "the task has no workspace and has held no lease"
			}
			return nil, err
		}
	}
	sub := func(part string) string {
		if o.RequestID == "" {
			return ""
		}
		return o.RequestID + "/" + part
	}
	rel, err := svc.Release(ctx, admission.ReleaseRequest{Holder: o.Binding, Token: o.Token, Force: o.Force, RequestID: sub("leases")})
	if err != nil {
		return nil, err
	}
	res := &EndResult{Binding: o.Binding, Leases: rel.Leases}
	if res.Leases == nil {
		res.Leases = []admission.Lease{}
	}
	if noWorkspace {
		return res, nil
	}
	if res.Workspace, err = p.Release(ctx, o.Binding, sub("release")); err != nil {
		return nil, err
	}
	if !o.Reclaim {
		return res, nil
	}
	pv, err := p.PreviewReclaim(ctx, o.Binding)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res.NotReclaimed = err
		return res, nil
	}
	res.Preview = pv
	if !pv.Salvage.Clean {
		res.NotReclaimed = &Error{Op: "end", Binding: o.Binding, Path: pv.Path, Err: ErrUnconfirmed,
			Reason: fmt.Sprintf("it holds work to salvage (%d changed files, or what only it holds): only a clean workspace is reclaimed by end", pv.Salvage.Files),
			Hint:   "preview its reclaim to see what would be salvaged, then confirm it"}
		return res, nil
	}
	r, err := p.Reclaim(ctx, ReclaimOptions{Binding: o.Binding, Confirm: pv.Digest, RequestID: sub("reclaim")})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		res.NotReclaimed = err
		return res, nil
	}
	res.Reclaimed = r
	return res, nil
}
