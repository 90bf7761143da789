package main

import (
	"errors"
	"strings"

	"github.com/majlis-dev/majlis/reservation"
)

// ExitCode is the process exit status, as documented in `majlis help exit-codes`.
type ExitCode int

// The exit codes of CLI.md. Scripts depend on them; never renumber.
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
// error codes. Library packages export sentinels; this table maps them.
func classify(err error) classification {
	var ue *usageError
	var re *reservation.Error
	switch {
	case errors.As(err, &ue) || isCobraUsage(err):
		return classification{ExitUsage, "usage", nil}
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
	}
	return classification{ExitError, "internal", nil}
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
