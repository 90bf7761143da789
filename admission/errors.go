package admission

import (
	"errors"
	"strings"
)

// Sentinels callers branch on (errors.Is). cmd/majlis maps each to an exit
// code and a stable error code in one table.
var (
	ErrInvalid         = errors.New("admission: invalid argument")
	ErrHeld            = errors.New("admission: held by another holder")
	ErrQuarantined     = errors.New("admission: resource is quarantined")
	ErrUnsafePath      = errors.New("admission: unsafe path")
	ErrPolicyBlocked   = errors.New("admission: blocked by policy")
	ErrNotFound        = errors.New("admission: no such lease")
	ErrNotHolder       = errors.New("admission: lease belongs to another holder")
	ErrNotQuarantined  = errors.New("admission: lease is not quarantined")
	ErrRequestConflict = errors.New("admission: request id already used with other arguments")
	ErrMalformed       = errors.New("admission: malformed ledger")
	ErrNotInitialized  = errors.New("admission: repository not initialized")
	// ErrReclaiming: a file or intent lease was asked for in a checkout
	// that a reclaim has reserved (Options.Guard said so).
	ErrReclaiming = errors.New("admission: the checkout is being reclaimed")
	// ErrTokenRequired: renewing or releasing a lease needs its lease
	// token, the owner process, or Force.
	ErrTokenRequired = errors.New("admission: the lease token is required")
	// ErrRecoverable: every lease that blocks an admission belongs to an
	// owner process that is proven dead; it can be released without its
	// token, and then the admission can succeed.
	ErrRecoverable = errors.New("admission: held by a dead owner; recoverable")
	// ErrHookExists: the hook installer (majlis hook install) found a pre-commit hook that majlis did
	// not write (or a backup it would overwrite); it is left untouched.
	ErrHookExists = errors.New("admission: a pre-commit hook majlis did not write is installed")
	// ErrCoordinationUnavailable: the shared ledger (etcd) did not answer
	// in time. No shared lease was granted, and none locally in its place.
	ErrCoordinationUnavailable = errors.New("admission: the coordination cluster is unavailable")
	// ErrDuplicateMachineID: another live host of the coordination cluster
	// has this machine's id (hosts cloned from one image): owners could
	// not be told apart, so shared leases are refused.
	ErrDuplicateMachineID = errors.New("admission: another live host has this machine id")
	// ErrClusterChanged: the coordination cluster is not the one this
	// repository used before (restored from a backup, or another one):
	// shared leases are refused until an operator confirms it.
	ErrClusterChanged = errors.New("admission: the coordination cluster changed")
)

// A Conflict is one existing lease that stands against a requested
// resource, with the policy key that decided what it gets.
type Conflict struct {
	Resource string `json:"resource"` // the requested resource
	Lease    Lease  `json:"lease"`    // the other holder's lease
	Policy   string `json:"policy"`   // the policy key that decided
	Reason   string `json:"reason"`
	// Recoverable: the other lease is active but its owner process is
	// proven dead, so anyone may release it (no token needed).
	Recoverable bool `json:"recoverable,omitempty"`
}

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
