package admission

import (
	"errors"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinels callers branch on (errors.Is). cmd/majlis maps each to an exit
// code and a stable error code in one table.
var (
	ErrInvalid         = wire.Sentinel("invalid_argument", "admission: invalid argument")
	ErrHeld            = wire.Sentinel("held", "admission: held by another holder")
	ErrQuarantined     = wire.Sentinel("quarantined", "admission: resource is quarantined")
	ErrUnsafePath      = wire.Sentinel("unsafe_path", "admission: unsafe path")
	ErrPolicyBlocked   = wire.Sentinel("policy_blocked", "admission: blocked by policy")
	ErrNotFound        = wire.Sentinel("not_found", "admission: no such lease")
	ErrNotHolder       = wire.Sentinel("not_holder", "admission: lease belongs to another holder")
	ErrNotQuarantined  = wire.Sentinel("not_quarantined", "admission: lease is not quarantined")
	ErrRequestConflict = wire.Sentinel("request_conflict", "admission: request id already used with other arguments")
	ErrMalformed       = wire.Sentinel("malformed_record", "admission: malformed ledger")
	ErrNotInitialized  = wire.Sentinel("not_initialized", "admission: repository not initialized")
	// ErrReclaiming: a file or intent lease was asked for in a checkout
	// that a reclaim has reserved (Options.Guard said so).
	ErrReclaiming = wire.Sentinel("reclaiming", "admission: the checkout is being reclaimed")
	// ErrTokenRequired: renewing or releasing a lease needs its lease
	// token, the owner process, or Force.
	ErrTokenRequired = wire.Sentinel("token_required", "admission: the lease token is required")
	// ErrTokenInUse: the lease token given already guards another holder's
	// live leases. Each task has a token of its own, so that one token
	// (exported in a shell, say) cannot silently cover every task.
	ErrTokenInUse = wire.Sentinel("token_in_use", "admission: the lease token guards another holder's leases")
	// ErrRecoverable: every lease that blocks an admission belongs to an
	// owner process that is proven dead; it can be released without its
	// token, and then the admission can succeed.
	ErrRecoverable = wire.Sentinel("recoverable", "admission: held by a dead owner; recoverable")
	// ErrHookExists: the hook installer (majlis hook install) found a pre-commit hook that majlis did
	// not write (or a backup it would overwrite); it is left untouched.
	ErrHookExists = wire.Sentinel("hook_exists", "admission: a pre-commit hook majlis did not write is installed")
	// ErrCoordinationUnavailable: the shared ledger (etcd) did not answer
	// in time. No shared lease was granted, and none locally in its place.
	ErrCoordinationUnavailable = wire.Sentinel("coordination_unavailable", "admission: the coordination cluster is unavailable")
	// ErrDuplicateMachineID: another live host of the coordination cluster
	// has this machine's id (hosts cloned from one image): owners could
	// not be told apart, so shared leases are refused.
	ErrDuplicateMachineID = wire.Sentinel("duplicate_machine_id", "admission: another live host has this machine id")
	// ErrClusterChanged: the coordination cluster is not the one this
	// repository used before (restored from a backup, or another one):
	// shared leases are refused until an operator confirms it.
	ErrClusterChanged = wire.Sentinel("cluster_changed", "admission: the coordination cluster changed")
)

// A Conflict is one existing lease that stands against a requested
// resource, with the policy key that decided what it gets (wire.Conflict).
type Conflict = wire.Conflict

// An Error reports a refused or failed admission operation with its facts.
type Error struct {
	Op        string // acquire, renew, release, list, resolve, check, policy
	Resource  string // the resource concerned, as the caller wrote it
	Path      string // the file or directory concerned
	Reason    string
	Hint      string // what the user can do
	Conflicts []Conflict
	Gaps      []string // check: changed paths outside the holder's leases
	// Details are further facts for scripts (the JSON error's details),
	// such as the holder and lease a refusal is about.
	Details map[string]any
	Err     error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Resource != "" {
		b.WriteString(" " + e.Resource)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "admission: "))
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Path != "" && !strings.Contains(e.Reason, e.Path) {
		b.WriteString(" (" + e.Path + ")")
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// ErrorCode is admission_failed: a ledger that could not be read or
// written, when the error wraps no sentinel of its own.
func (e *Error) ErrorCode() string { return "admission_failed" }

// ErrorDetails are the error's facts, the details of its refusal: op,
// resource, path, reason, hint, and the conflicts (held, quarantined) or
// the gaps (policy_blocked), then Details.
func (e *Error) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.Op}
	for k, v := range map[string]string{"resource": e.Resource, "path": e.Path, "reason": e.Reason, "hint": e.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	if len(e.Conflicts) > 0 || errors.Is(e, ErrHeld) || errors.Is(e, ErrQuarantined) {
		d["conflicts"] = append([]Conflict{}, e.Conflicts...)
	}
	if len(e.Gaps) > 0 || errors.Is(e, ErrPolicyBlocked) {
		d["gaps"] = append([]string{}, e.Gaps...)
	}
	for k, v := range e.Details {
		if _, taken := d[k]; !taken {
			d[k] = v
		}
	}
	return d
}
