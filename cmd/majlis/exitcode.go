package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/server"
)

// ExitCode is the process exit status, as documented in `majlis help exit-codes`.
type ExitCode int

// The exit codes of docs/cli.md. Scripts depend on them; never renumber.
const (
	ExitOK       ExitCode = 0 // done
	ExitError    ExitCode = 1 // unexpected failure
	ExitUsage    ExitCode = 2 // usage error
	ExitRefused  ExitCode = 3 // refused for safety
	ExitHeld     ExitCode = 4 // held by another live owner
	ExitNotFound ExitCode = 5 // not found
)

// usageError marks an error as the caller's misuse of the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// classification is what a failure looks like to a script.
type classification struct {
	exit    ExitCode
	code    string
	details map[string]any
}

// classify is the ONE place where errors become exit codes and stable
// error codes. Library packages export sentinels; these tables map them.
func classify(err error) classification {
	c := classifySentinel(err)
	// A begin whose intents were refused after its workspace was
	// allocated: the refusal's code, and the workspace left in place.
	var be *provider.BeginError
	if errors.As(err, &be) {
		if c.details == nil {
			c.details = map[string]any{}
		}
		c.details["workspace"] = be.Workspace
		c.details["request_id"] = be.RequestID
		c.details["hint"] = be.Hint()
	}
	// A stale --confirm: what changed since the confirmed preview.
	var ps *provider.PreviewStaleError
	if errors.As(err, &ps) {
		if c.details == nil {
			c.details = map[string]any{}
		}
		c.details["confirmed"] = ps.Confirmed
		c.details["digest"] = ps.Digest
		c.details["preview"] = ps.Preview
		if ps.Changes != nil {
			c.details["changed"] = ps.Changes
		}
	}
	return c
}

func classifySentinel(err error) classification {
	var ue *usageError
	var re *reservation.Error
	var ee *envvar.Error
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		return classification{ExitError, "internal", map[string]any{"panic": fmt.Sprint(pe.value)}}
	case errors.As(err, &ee):
		return classification{ExitUsage, "usage", map[string]any{"variable": ee.Name, "value": ee.Value, "accepted": ee.Accepted, "reason": ee.Reason}}
	case errors.As(err, &ue) || isCobraUsage(err):
		return classification{ExitUsage, "usage", nil}
	}
	for _, m := range providerCodes {
		if errors.Is(err, m.err) {
			return classification{m.exit, m.code, providerDetails(err)}
		}
	}
	for _, m := range admissionCodes {
		if errors.Is(err, m.err) {
			return classification{m.exit, m.code, admissionDetails(err)}
		}
	}
	for _, m := range serverCodes {
		if errors.Is(err, m.err) {
			return classification{m.exit, m.code, serverDetails(err)}
		}
	}
	switch {
	case errors.Is(err, reservation.ErrInvalid):
		return classification{ExitUsage, "invalid_request", reservationDetails(err)}
	case errors.Is(err, reservation.ErrHeld):
		return classification{ExitHeld, "held", reservationDetails(err)}
	case errors.Is(err, reservation.ErrOwnerAlive):
		return classification{ExitHeld, "owner_alive", reservationDetails(err)}
	case errors.Is(err, reservation.ErrOwnerUnknown):
		return classification{ExitHeld, "owner_unknown", reservationDetails(err)}
	case errors.Is(err, reservation.ErrNotExpired):
		return classification{ExitHeld, "not_expired", reservationDetails(err)}
	case errors.Is(err, reservation.ErrMalformed):
		return classification{ExitRefused, "malformed_record", reservationDetails(err)}
	case errors.Is(err, reservation.ErrUnsupportedFS):
		return classification{ExitRefused, "unsupported_filesystem", reservationDetails(err)}
	case errors.Is(err, reservation.ErrNotOwner):
		return classification{ExitRefused, "not_owner", reservationDetails(err)}
	case errors.Is(err, reservation.ErrChanged):
		return classification{ExitRefused, "lease_changed", reservationDetails(err)}
	case errors.Is(err, reservation.ErrExists):
		return classification{ExitHeld, "exists", reservationDetails(err)}
	case errors.Is(err, reservation.ErrNotFound):
		return classification{ExitNotFound, "not_found", reservationDetails(err)}
	case errors.As(err, &re):
		return classification{ExitError, "reservation_failed", reservationDetails(err)}
	case errors.As(err, new(*gitops.Error)):
		return classification{ExitError, "git_failed", gitDetails(err)}
	case errors.As(err, new(*admission.Error)):
		return classification{ExitError, "admission_failed", admissionDetails(err)}
	}
	return classification{ExitError, "internal", nil}
}

// providerCodes maps workspace errors, most specific first.
var providerCodes = []struct {
	err  error
	exit ExitCode
	code string
}{
	{provider.ErrInvalidBinding, ExitUsage, "invalid_binding"},
	{provider.ErrInvalidArgument, ExitUsage, "invalid_argument"},
	{provider.ErrNotRepository, ExitNotFound, "not_a_repository"},
	{provider.ErrNotInitialized, ExitNotFound, "not_initialized"},
	{provider.ErrNotFound, ExitNotFound, "not_found"},
	{provider.ErrUnknownBase, ExitNotFound, "unknown_base"},
	{provider.ErrBindingLive, ExitHeld, "binding_live"},
	{provider.ErrWorkspaceLive, ExitHeld, "workspace_live"},
	{provider.ErrPeerOverlap, ExitRefused, "peer_overlap"},
	{provider.ErrPreviewStale, ExitRefused, "preview_stale"},
	{provider.ErrUnconfirmed, ExitRefused, "unconfirmed"},
	{provider.ErrDirtySubmodule, ExitRefused, "dirty_submodule"},
	{provider.ErrRepository, ExitRefused, "repository_mismatch"},
	{provider.ErrWorktreeConfig, ExitRefused, "worktree_config_mismatch"},
	{provider.ErrLocked, ExitRefused, "locked"},
	{provider.ErrCrossDevice, ExitRefused, "cross_device"},
	{provider.ErrTrash, ExitError, "trash_failed"},
	{provider.ErrAlreadyInit, ExitRefused, "already_initialized"},
	{provider.ErrBranchExists, ExitRefused, "branch_exists"},
	{provider.ErrBranchCheckedOut, ExitRefused, "branch_checked_out"},
	{provider.ErrUnknownBranch, ExitNotFound, "unknown_branch"},
	{provider.ErrPathExists, ExitRefused, "path_exists"},
	{provider.ErrNested, ExitRefused, "nested_workspace"},
	{provider.ErrUnsafePath, ExitRefused, "unsafe_path"},
	{provider.ErrReserved, ExitRefused, "reserved_target"},
	{provider.ErrRequestConflict, ExitRefused, "request_conflict"},
	{provider.ErrMalformed, ExitRefused, "malformed_record"},
	{provider.ErrMissing, ExitRefused, "workspace_missing"},
	{provider.ErrIdentity, ExitRefused, "identity_drift"},
	{provider.ErrInterrupted, ExitRefused, "interrupted"},
}

// admissionCodes maps lease and admission errors.
var admissionCodes = []struct {
	err  error
	exit ExitCode
	code string
}{
	{admission.ErrInvalid, ExitUsage, "invalid_argument"},
	{admission.ErrHeld, ExitHeld, "held"},
	{admission.ErrReclaiming, ExitHeld, "reclaiming"},
	{admission.ErrRecoverable, ExitHeld, "recoverable"},
	{admission.ErrNoFreePort, ExitHeld, "no_free_port"},
	{admission.ErrTokenRequired, ExitRefused, "token_required"},
	{admission.ErrQuarantined, ExitRefused, "quarantined"},
	{admission.ErrUnsafePath, ExitRefused, "unsafe_path"},
	{admission.ErrPolicyBlocked, ExitRefused, "policy_blocked"},
	{admission.ErrNotFound, ExitNotFound, "not_found"},
	{admission.ErrNotHolder, ExitRefused, "not_holder"},
	{admission.ErrNotQuarantined, ExitRefused, "not_quarantined"},
	{admission.ErrRequestConflict, ExitRefused, "request_conflict"},
	{admission.ErrMalformed, ExitRefused, "malformed_record"},
	{admission.ErrNotInitialized, ExitNotFound, "not_initialized"},
	{admission.ErrHookExists, ExitRefused, "hook_exists"},
}

// serverCodes maps the server's errors: the probe's states other than
// running, and the refusals of start, stop and serve.
var serverCodes = []struct {
	err  error
	exit ExitCode
	code string
}{
	{server.ErrInvalid, ExitUsage, "invalid_argument"},
	{server.ErrNotRunning, ExitNotFound, "server_not_running"},
	{server.ErrStaleLease, ExitNotFound, "server_stale_lease"},
	{server.ErrStarting, ExitHeld, "server_starting"},
	{server.ErrUnresponsive, ExitHeld, "server_unresponsive"},
	{server.ErrForeign, ExitRefused, "server_foreign"},
	{server.ErrVersionMismatch, ExitRefused, "server_version_mismatch"},
	{server.ErrUnsafeState, ExitRefused, "unsafe_state"},
	{server.ErrFenced, ExitError, "server_fenced"},
	{server.ErrStartFailed, ExitError, "server_start_failed"},
}

// serverDetails are the facts of a *server.Error: what the probe found
// ("server"), the file, reason and hint.
func serverDetails(err error) map[string]any {
	var se *server.Error
	if !errors.As(err, &se) {
		return reservationDetails(err)
	}
	d := map[string]any{"op": se.Op}
	for k, v := range map[string]string{"path": se.Path, "reason": se.Reason, "hint": se.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	if se.Status != nil {
		d["server"] = se.Status
	}
	return d
}

// admissionDetails are the facts of an *admission.Error: op, resource,
// path, reason, hint, and the conflicts (held, quarantined) or the gaps
// (policy_blocked).
func admissionDetails(err error) map[string]any {
	var ae *admission.Error
	if !errors.As(err, &ae) {
		return nil
	}
	d := map[string]any{"op": ae.Op}
	for k, v := range map[string]string{"resource": ae.Resource, "path": ae.Path, "reason": ae.Reason, "hint": ae.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	if len(ae.Conflicts) > 0 || errors.Is(err, admission.ErrHeld) || errors.Is(err, admission.ErrQuarantined) {
		d["conflicts"] = append([]admission.Conflict{}, ae.Conflicts...)
	}
	if len(ae.Gaps) > 0 || errors.Is(err, admission.ErrPolicyBlocked) {
		d["gaps"] = append([]string{}, ae.Gaps...)
	}
	return d
}

func providerDetails(err error) map[string]any {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return nil
	}
	d := map[string]any{"op": pe.Op}
	for k, v := range map[string]string{"binding": pe.Binding, "path": pe.Path, "peer": pe.Peer, "reason": pe.Reason, "hint": pe.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	for k, v := range pe.Details {
		if _, taken := d[k]; !taken {
			d[k] = v
		}
	}
	return d
}

func gitDetails(err error) map[string]any {
	var ge *gitops.Error
	if !errors.As(err, &ge) {
		return nil
	}
	return map[string]any{"args": ge.Args, "exit_code": ge.ExitCode, "stderr": ge.Stderr}
}

// isCobraUsage recognises the usage errors that cobra returns as plain
// errors (unknown commands and flags); flag and argument errors of our own
// commands are wrapped in usageError where they arise.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "required flag"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func reservationDetails(err error) map[string]any {
	var re *reservation.Error
	if !errors.As(err, &re) {
		return nil
	}
	d := map[string]any{"op": re.Op, "path": re.Path}
	if re.Resource != "" {
		d["resource"] = re.Resource
	}
	if re.Holder != nil {
		d["holder"] = re.Holder
	}
	if re.Reason != "" {
		d["reason"] = re.Reason
	}
	return d
}
