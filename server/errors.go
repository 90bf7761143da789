package server

import (
	"errors"
	"strings"
)

// Sentinels that callers branch on with errors.Is. The states of a probe
// that are not "running" have one each, so that the command line can map
// them to exit codes.
var (
	ErrNotRunning      = errors.New("server: not running")
	ErrStaleLease      = errors.New("server: stale lease (its owner is dead)")
	ErrStarting        = errors.New("server: starting")
	ErrUnresponsive    = errors.New("server: unresponsive (holds the lease, does not answer)")
	ErrForeign         = errors.New("server: the recorded port answers, but not as the leaseholder")
	ErrVersionMismatch = errors.New("server: another version holds the lease")
	ErrUnsafeState     = errors.New("server: state folder or lease file not private to this user")
	ErrStartFailed     = errors.New("server: start failed")
	ErrFenced          = errors.New("server: the server lease is no longer this server's")
	ErrInvalid         = errors.New("server: invalid argument")
	// ErrBusy: every handler stayed taken for the bounded wait; nothing
	// of the request ran (503 busy, with Retry-After).
	ErrBusy = errors.New("server: busy (every handler taken)")
	// ErrStopping: the server is stopping; a call under way was stopped
	// at a safe point and released what it held (503 stopping).
	ErrStopping = errors.New("server: stopping")
)

// An Error reports a refused or failed server operation with its facts.
type Error struct {
	Op     string  // probe, start, stop, serve, check
	Path   string  // the file concerned, if any
	Status *Status // what the probe found, if it ran
	Reason string
	Hint   string // what the user can do next
	Err    error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("server ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "server: "))
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Path != "" {
		b.WriteString("; file ")
		b.WriteString(e.Path)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}
