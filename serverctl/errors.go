package serverctl

import (
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinels that callers branch on with errors.Is. The states of a probe
// that are not "running" have one each, so that each has its code; a
// server's refusal of a call that finds every handler taken, or the
// server stopping, is ErrBusy or ErrStopping.
var (
	ErrNotRunning      = wire.Sentinel("server_not_running", "server: not running")
	ErrStaleLease      = wire.Sentinel("server_stale_lease", "server: stale lease (its owner is dead)")
	ErrStarting        = wire.Sentinel("server_starting", "server: starting")
	ErrUnresponsive    = wire.Sentinel("server_unresponsive", "server: unresponsive (holds the lease, does not answer)")
	ErrForeign         = wire.Sentinel("server_foreign", "server: the recorded port answers, but not as the leaseholder")
	ErrVersionMismatch = wire.Sentinel("server_version_mismatch", "server: another version holds the lease")
	ErrUnsafeState     = wire.Sentinel("unsafe_state", "server: state folder or lease file not private to this user")
	ErrStartFailed     = wire.Sentinel("server_start_failed", "server: start failed")
	ErrInvalid         = wire.Sentinel("invalid_argument", "server: invalid argument")
	// ErrBusy: every handler stayed taken for the bounded wait; nothing
	// of the request ran (503 busy, with Retry-After).
	ErrBusy = wire.Sentinel("busy", "server: busy (every handler taken)")
	// ErrStopping: the server is stopping; a call under way was stopped
	// at a safe point and released what it held (503 stopping).
	ErrStopping = wire.Sentinel("stopping", "server: stopping")
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

// ErrorDetails are the error's facts, the details of its refusal: op,
// path, reason, hint, and what the probe found (server).
func (e *Error) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.Op}
	for k, v := range map[string]string{"path": e.Path, "reason": e.Reason, "hint": e.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	if e.Status != nil {
		d["server"] = e.Status
	}
	return d
}
