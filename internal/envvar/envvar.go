// Package envvar reads the environment variables that tune majlis and
// says precisely why a value is refused.
//
// Every variable majlis reads is validated when the command starts (the
// CLI calls the owning package's checker), so that a bad value is a usage
// error naming the variable and what it accepts, never a surprise later:
// a silently ignored setting, a failure half way through an operation, or
// a panic.
package envvar

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// An Error reports an environment variable whose value is not accepted.
type Error struct {
	Name     string // the variable
	Value    string // its value
	Accepted string // what the variable accepts, in words
	Reason   string // why this value is not accepted
}

func (e *Error) Error() string {
	return fmt.Sprintf("environment variable %s=%q is not accepted: %s; it accepts %s", e.Name, e.Value, e.Reason, e.Accepted)
}

// ErrorCode is usage: a value the command line does not accept.
func (e *Error) ErrorCode() string { return "usage" }

// ErrorDetails are the variable, its value, what it accepts and why this
// value is not accepted.
func (e *Error) ErrorDetails() map[string]any {
	return map[string]any{"variable": e.Name, "value": e.Value, "accepted": e.Accepted, "reason": e.Reason}
}

// Duration returns the Go duration in variable name, or def when the
// variable is unset or empty. A value that does not parse, or lies outside
// [min, max], is an *Error.
func Duration(name string, def, min, max time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	accepted := fmt.Sprintf("a Go duration from %s to %s (such as 90s or 10m); unset or empty means %s", Format(min), Format(max), Format(def))
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, &Error{Name: name, Value: v, Accepted: accepted, Reason: "not a Go duration"}
	case d < min:
		return 0, &Error{Name: name, Value: v, Accepted: accepted, Reason: "shorter than " + Format(min)}
	case d > max:
		return 0, &Error{Name: name, Value: v, Accepted: accepted, Reason: "longer than " + Format(max)}
	}
	return d, nil
}

// Format renders d as a person writes it: 24h, 2m, 90s, 1h30m.
func Format(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
