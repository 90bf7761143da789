package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/server"
)

// checkEnvironment validates, when a command starts, every environment
// variable majlis reads (docs/cli.md "Environment"), so that a bad value is
// a usage error naming it, before anything is touched. The packages that
// read the variables decide what they accept.
func checkEnvironment() error {
	if _, err := provider.ReservationTTL(); err != nil {
		return err
	}
	if err := admission.CheckEnvironment(); err != nil {
		return err
	}
	if _, err := server.MaxHandlers(); err != nil {
		return err
	}
	if err := failpoint.Check(); err != nil {
		return err
	}
	if h := os.Getenv(holderEnv); h != "" {
		if err := admission.CheckHolder(h); err != nil {
			return &envvar.Error{Name: holderEnv, Value: h, Reason: "not a holder name",
				Accepted: "a holder name: printable characters, without leading or trailing spaces; unset or empty means none"}
		}
	}
	return nil
}

// panicError is a panic recovered in run: a bug, reported as `internal`.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("internal error (a bug in majlis): panic: %v; please report it with the stack trace printed on stderr", e.value)
}

func newPanicError(v any) *panicError { return &panicError{value: v, stack: debug.Stack()} }
