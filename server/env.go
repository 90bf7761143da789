package server

import (
	"fmt"
	"os"
	"strconv"

	"github.com/majlis-dev/majlis/internal/envvar"
)

// MaxHandlersEnv sets Options.MaxHandlers for 'majlis serve' when its flag
// is not given.
const MaxHandlersEnv = "MAJLIS_MAX_HANDLERS"

// maxHandlersLimit is the largest bound accepted.
const maxHandlersLimit = 4096

// MaxHandlers returns the bound in MAJLIS_MAX_HANDLERS, or
// DefaultMaxHandlers when it is unset or empty; any other value than an
// integer from 1 to 4096 is an *envvar.Error.
func MaxHandlers() (int, error) {
	v := os.Getenv(MaxHandlersEnv)
	if v == "" {
		return DefaultMaxHandlers, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxHandlersLimit {
		reason := "not an integer"
		if err == nil {
			reason = "out of range"
		}
		return 0, &envvar.Error{Name: MaxHandlersEnv, Value: v, Reason: reason,
			Accepted: fmt.Sprintf("an integer from 1 to %d; unset or empty means %d", maxHandlersLimit, DefaultMaxHandlers)}
	}
	return n, nil
}

// CheckMaxHandlers validates a --max-handlers value.
func CheckMaxHandlers(n int) error {
	if n < 1 || n > maxHandlersLimit {
		return &Error{Op: "serve", Err: ErrInvalid, Reason: fmt.Sprintf("max handlers %d is not from 1 to %d", n, maxHandlersLimit)}
	}
	return nil
}
