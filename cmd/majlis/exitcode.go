package main

import (
	"errors"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// ExitCode is the process exit status, as documented in `majlis help exit-codes`.
type ExitCode = wire.ExitCode

// The exit codes of docs/cli.md (wire's). Scripts depend on them; never
// renumber.
const (
	ExitOK       = wire.ExitOK       // done
	ExitError    = wire.ExitError    // unexpected failure
	ExitUsage    = wire.ExitUsage    // usage error
	ExitRefused  = wire.ExitRefused  // refused for safety
	ExitHeld     = wire.ExitHeld     // held by another live owner
	ExitNotFound = wire.ExitNotFound // not found
)

// usageError marks an error as the caller's misuse of the command line.
type usageError struct{ err error }

func (e *usageError) Error() string     { return e.err.Error() }
func (e *usageError) Unwrap() error     { return e.err }
func (e *usageError) ErrorCode() string { return "usage" }

// classify is err as a script sees it on surface s: wire's one table of
// codes, after the two failures only the command line has (an
// interruption, and cobra's own usage errors).
func classify(s wire.Surface, err error) wire.Refusal {
	// A run stopped by Ctrl-C or SIGTERM: whatever error that made.
	var ie *interruptedError
	if errors.As(err, &ie) {
		d := map[string]any{"signal": ie.sig.String()}
		if ie.requestID != "" {
			d["request_id"] = ie.requestID
		}
		return wire.Refusal{Code: "interrupted", Message: err.Error(), Details: d, ExitCode: ie.exit()}
	}
	if isCobraUsage(err) {
		err = &usageError{err}
	}
	return wire.Classify(err, s)
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
