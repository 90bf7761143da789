package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
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
	// hint is what the user can do on the command line, when the code
	// table (or the begin that failed half-way) has one; it is also
	// details.hint.
	hint string
	// libHint is the library's hint that hint replaces (or holds).
	libHint string
}

// classify is the ONE place where errors become exit codes and stable
// error codes. Library packages export sentinels; these tables map them.
func classify(err error) classification { return classifyOn(surfaceCLI, err) }

// classifyOn is classify with the hint in the words of surface s.
func classifyOn(s surface, err error) classification {
	// A run stopped by Ctrl-C or SIGTERM: whatever error that made.
	var ie *interruptedError
	if errors.As(err, &ie) {
		d := map[string]any{"signal": ie.sig.String()}
		if ie.requestID != "" {
			d["request_id"] = ie.requestID
		}
		return classification{exit: ie.exit(), code: "interrupted", details: d}
	}
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
		c.hint = beginHint(s, be)
	} else {
		var adds bool
		c.hint, adds = hintOn(s, c.code, c.details)
		if lib, _ := c.details["hint"].(string); lib != "" && c.hint != "" {
			if adds {
				c.hint = lib + "; " + c.hint
			}
			c.libHint = lib
		}
	}
	if c.hint != "" {
		if c.details == nil {
			c.details = map[string]any{}
		}
		c.details["hint"] = c.hint
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
	// Error types first (a panic, a usage error), then sentinels package by
	// package (a provider error wrapping an admission error is the
	// provider's), then the library error types.
	for pkg := range pkgCount {
		for i := range codeTable {
			c := &codeTable[i]
			for _, s := range c.From {
				if s.pkg != pkg || !s.matches(err) {
					continue
				}
				var d map[string]any
				if s.details != nil {
					d = s.details(err)
				}
				return classification{exit: c.Exit, code: c.Code, details: d}
			}
		}
	}
	return classification{exit: ExitError, code: "internal"}
}

func (s source) matches(err error) bool {
	if s.is != nil {
		return s.is(err)
	}
	return errors.Is(err, s.err)
}

func panicDetails(err error) map[string]any {
	var pe *panicError
	if !errors.As(err, &pe) {
		return nil
	}
	return map[string]any{"panic": fmt.Sprint(pe.value)}
}

func envDetails(err error) map[string]any {
	var ee *envvar.Error
	if !errors.As(err, &ee) {
		return nil
	}
	return map[string]any{"variable": ee.Name, "value": ee.Value, "accepted": ee.Accepted, "reason": ee.Reason}
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
	for k, v := range ae.Details {
		if _, taken := d[k]; !taken {
			d[k] = v
		}
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

// durableDetails are the details of a failed durable write, as they were
// when the lease package wrote records.
func durableDetails(err error) map[string]any {
	var de *durable.Error
	if !errors.As(err, &de) {
		return nil
	}
	d := map[string]any{"op": de.Op, "path": de.Path}
	if r := de.Reason(); r != "" {
		d["reason"] = r
	}
	return d
}
