package provider

import (
	"context"
	"fmt"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/wire"
)

// AllocateResult is wire.AllocateResult: the result type is defined once, in the wire contract.
type AllocateResult = wire.AllocateResult

// AllocateWithPorts allocates a workspace (Allocate) and then grants
// ports free ports (host:port:auto) to its binding, in one admission.
// The ports can only be asked for once the workspace exists; when they
// are refused (no free port), the workspace stays and a *BeginError
// (Ports set) names it. With o.RequestID, a retry returns the recorded
// workspace and ports.
func (p *Provider) AllocateWithPorts(ctx context.Context, o AllocateOptions, ports int, token string) (*AllocateResult, error) {
	if ports < 0 || ports > maxPorts {
		return nil, &Error{Op: "allocate", Binding: o.Binding, Err: ErrInvalidArgument,
			Reason: fmt.Sprintf("%d ports: the number of ports is between 0 and %d", ports, maxPorts)}
	}
	if ports > 0 && token != "" {
		if err := admission.ValidToken("allocate", token); err != nil {
			return nil, err
		}
	}
	ws, err := p.Allocate(ctx, o)
	if err != nil {
		return nil, err
	}
	res := &AllocateResult{Workspace: ws, Ports: []int{}, Leases: []admission.Lease{}}
	if ports == 0 {
		return res, nil
	}
	resources := make([]string, ports)
	for i := range resources {
		resources[i] = "host:" + admission.AutoPort
	}
	reqID := ""
	if o.RequestID != "" {
		reqID = o.RequestID + "/ports"
	}
	refused := func(err error) error {
		return &BeginError{Task: o.Binding, Workspace: ws, RequestID: o.RequestID, Err: err, Ports: true}
	}
	svc, err := p.Admission(ctx)
	if err != nil {
		return nil, refused(err)
	}
	defer svc.Close()
	granted, err := svc.Acquire(ctx, admission.AcquireRequest{Holder: o.Binding, Resources: resources,
		RequestID: reqID, OwnerPID: o.OwnerPID, Token: token})
	if err != nil {
		return nil, refused(err)
	}
	res.Ports, res.Leases, res.Token = granted.Ports, granted.Leases, granted.Token
	return res, nil
}
