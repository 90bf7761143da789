package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/wire"
)

// BeginOptions describe a task to begin.
type BeginOptions struct {
	Task string // the binding of its workspace and the holder of its leases
	// Paths are the repository paths the task will touch, literal or
	// ending in /** (at least one): its repository intent.
	Paths []string
	Base  string // revision of the new workspace; default HEAD of the main worktree
	// Shared declares the intent in the checkout the provider was opened
	// in, instead of allocating a workspace.
	Shared bool
	TTL    time.Duration // lifetime of the intent leases; 0: admission.DefaultTTL
	// RequestID makes the call idempotent: a retry with the same id and
	// arguments returns the recorded result, or resumes where an earlier
	// attempt stopped. Empty: Begin makes one up (reported in the result
	// and in a BeginError, so that the caller can resume).
	RequestID string
	// OwnerPID, when not 0, is the task's process (the agent): its life
	// marks the workspace in use (as allocate --owner-pid), it may renew
	// and release the leases without their token, and its proven death
	// makes them recoverable.
	OwnerPID int
	// Token is the lease token of the intent leases (admission.AcquireRequest.Token);
	// empty: one is generated and returned in the result, once.
	Token string
	// Ports asks for that many free ports (host:port:auto), granted to
	// the task with its intents, in the same admission.
	Ports int
	// NoPool makes the workspace with git worktree add even when a pooled
	// worktree is ready (pool.md).
	NoPool bool
}

// BeginResult is wire.BeginResult: the result type is defined once, in the wire contract.
type BeginResult = wire.BeginResult

// A BeginError reports a begin whose workspace was allocated but whose
// intents were refused. The workspace is left in place: undoing an
// allocation is a reclaim, which is never done behind the caller's back.
// It unwraps to the refusal (admission's ErrHeld, ErrQuarantined, ...).
type BeginError struct {
	Task      string
	Workspace *Workspace
	RequestID string
	Err       error
	// Ports: the refused leases were the ports of 'workspace allocate
	// --ports' (AllocateWithPorts), not a begin's intents.
	Ports bool
}

func (e *BeginError) Unwrap() error { return e.Err }

func (e *BeginError) Error() string {
	if e.Ports {
		return fmt.Sprintf("allocate %s: the workspace was allocated at %s, but its ports were refused: %v; %s",
			e.Task, e.Workspace.Path, e.Err, e.Hint())
	}
	return fmt.Sprintf("begin %s: the workspace was allocated at %s, but its intents were refused: %v; %s",
		e.Task, e.Workspace.Path, e.Err, e.Hint())
}

// AnnotateDetails adds the workspace left in place and the request id
// that resumes the begin to the details of the refusal it wraps.
func (e *BeginError) AnnotateDetails(d map[string]any) {
	d["workspace"] = e.Workspace
	d["request_id"] = e.RequestID
}

// BegunTask names the task, the request id that resumes it, and whether
// the refused leases were ports: the refusal's hint (wire.Begun).
func (e *BeginError) BegunTask() (task, requestID string, ports bool) {
	return e.Task, e.RequestID, e.Ports
}

// Hint says what the caller can do next.
func (e *BeginError) Hint() string {
	if e.Ports {
		return fmt.Sprintf("the workspace is left in place: acquire its ports later for holder %s, or reclaim the workspace", e.Task)
	}
	return fmt.Sprintf("the workspace is left in place: a retry with request id %s resumes once the conflict is gone, "+
		"or reclaim the workspace", e.RequestID)
}

// maxPorts bounds BeginOptions.Ports.
const maxPorts = 64

// Begin starts a task in one step: it allocates the task's workspace
// (binding Task, intent Paths) and acquires intent:PATH leases for holder
// Task in that workspace's checkout; with Shared, it only acquires them,
// in the current checkout.
//
// The workspace must exist before its intents can be admitted in it, so
// the two steps are not one transaction. Everything that can be checked
// without the workspace is checked before it is allocated: the task name,
// the paths, and the request id, which is bound to all the arguments
// before any effect. When the admission then refuses, the workspace stays
// and Begin returns a *BeginError naming it: a retry with the same request
// id resumes (the allocation is found, the admission is tried again), and
// 'majlis workspace reclaim' takes the workspace back.
func (p *Provider) Begin(ctx context.Context, o BeginOptions) (*BeginResult, error) {
	fail := func(reason, hint string) error {
		return &Error{Op: "begin", Binding: o.Task, Err: ErrInvalidArgument, Reason: reason, Hint: hint}
	}
	if err := ValidBinding(o.Task); err != nil {
		return nil, err
	}
	if len(o.Paths) == 0 {
		return nil, &Error{Op: "begin", Binding: o.Task, Err: ErrInvalidArgument, Reason: "no paths named",
			Hint: "name what the task will touch (a path, or DIR/**)", Details: map[string]any{"argument": "paths"}}
	}
	intent, err := normalizeIntent(o.Paths)
	if err != nil {
		return nil, fail(err.Error(), "")
	}
	resources := make([]string, len(intent))
	for i, g := range intent {
		resources[i] = "intent:" + g
		r, err := admission.ParseResource(resources[i])
		if err != nil {
			return nil, err
		}
		// What can be refused before the workspace exists is refused now.
		if lit := r.Literal(); lit != "" {
			if err := admission.CheckWritten(lit); err != nil {
				return nil, err
			}
		}
	}
	if o.Ports < 0 || o.Ports > maxPorts {
		return nil, fail(fmt.Sprintf("%d ports: the number of ports is between 0 and %d", o.Ports, maxPorts), "")
	}
	for range o.Ports {
		resources = append(resources, "host:"+admission.AutoPort)
	}
	if err := admission.ValidTTL("begin", o.TTL); err != nil {
		return nil, err
	}
	if o.Shared && o.Base != "" {
		return nil, fail("a base is the revision of a new workspace, and a shared task allocates none", "give a base or ask for a shared task, not both")
	}
	reqID := o.RequestID
	if reqID == "" {
		reqID = "begin-" + newID()[:16]
	}
	args := requestArgs{Op: "begin", Binding: o.Task, Base: o.Base, Intent: intent, Shared: o.Shared, OwnerPID: o.OwnerPID, Ports: o.Ports}
	if o.TTL != 0 {
		args.TTL = o.TTL.String()
	}
	// A request id is bound to all the arguments once something was done
	// under it (a workspace allocated, or an admission tried), so that a
	// retry with other arguments is refused before any effect, and a
	// begin that failed before any effect (an unknown base) binds nothing.
	if err := p.records.CheckRequest(reqID, args); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	res := &BeginResult{Task: o.Task, Checkout: p.repo.Toplevel, RequestID: reqID}
	if !o.Shared {
		ws, err := p.Allocate(ctx, AllocateOptions{Binding: o.Task, Base: o.Base, Intent: intent, OwnerPID: o.OwnerPID, RequestID: reqID + "/allocate", NoPool: o.NoPool})
		if err != nil {
			return nil, err
		}
		res.Workspace, res.Checkout = ws, ws.Path
	}
	if err := p.records.RecordRequest(reqID, args); err != nil {
		return nil, err
	}
	refused := func(err error) error {
		if res.Workspace == nil {
			return err
		}
		return &BeginError{Task: o.Task, Workspace: res.Workspace, RequestID: reqID, Err: err}
	}
	svc, err := p.Admission(ctx)
	if err != nil {
		return nil, refused(err)
	}
	defer svc.Close()
	granted, err := svc.Acquire(ctx, admission.AcquireRequest{Holder: o.Task, TTL: o.TTL, Resources: resources,
		Checkout: res.Checkout, Cwd: res.Checkout, RequestID: reqID, OwnerPID: o.OwnerPID, Token: o.Token})
	if err != nil {
		return nil, refused(err)
	}
	res.Leases, res.Warnings, res.DecidedBy, res.Replayed = granted.Leases, granted.Warnings, granted.DecidedBy, granted.Replayed
	res.Token, res.Ports = granted.Token, granted.Ports
	if res.Ports == nil {
		res.Ports = []int{} // a result recorded before ports existed
	}
	return res, nil
}
