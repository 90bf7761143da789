package reservation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinels that callers branch on with errors.Is. Every error this package
// returns for a refused operation is an *Error wrapping one of them.
var (
	// ErrHeld: the resource is leased to another owner.
	ErrHeld = wire.Sentinel("held", "reservation: held by another owner")
	// ErrMalformed: a lease or high-water-mark record cannot be trusted.
	ErrMalformed = wire.Sentinel("malformed_record", "reservation: malformed lease record")
	// ErrNotOwner: the caller is not the exact owner of the lease (another
	// process, another token, a replaced file, or a lease already released).
	ErrNotOwner = wire.Sentinel("not_owner", "reservation: not the owner of this lease")
	// ErrOwnerAlive: recovery refused because the owner is still running.
	ErrOwnerAlive = wire.Sentinel("owner_alive", "reservation: lease owner is alive")
	// ErrOwnerUnknown: recovery refused because the owner's death cannot be
	// proven from this host (another machine, another pid namespace,
	// unreadable process table).
	ErrOwnerUnknown = wire.Sentinel("owner_unknown", "reservation: lease owner's liveness cannot be proven")
	// ErrNotExpired: recovery refused because the lease has not expired.
	ErrNotExpired = wire.Sentinel("not_expired", "reservation: lease has not expired")
	// ErrNotFound: there is no lease for the resource.
	ErrNotFound = wire.Sentinel("not_found", "reservation: no such lease")
	// ErrChanged: the lease changed between inspection and recovery.
	ErrChanged = wire.Sentinel("lease_changed", "reservation: lease changed during recovery")
	// ErrUnsupportedFS: the lease directory is not on a local filesystem.
	ErrUnsupportedFS = wire.Sentinel("unsupported_filesystem", "reservation: lease directory is not on a local filesystem")
	// ErrInvalid: the request itself is invalid (bad resource name, TTL...).
	ErrInvalid = wire.Sentinel("invalid_request", "reservation: invalid request")
	// ErrIdentity: this process cannot establish its own owner identity.
	ErrIdentity = wire.Sentinel("reservation_failed", "reservation: cannot establish this process's owner identity")
)

// An Error reports a refused or failed lease operation with the facts a
// caller needs to explain it: which operation, which file, who holds the
// resource and why it was refused.
type Error struct {
	Op       string  // acquire, inspect, renew, release, recover, open, verify
	Resource string  // the resource name, when known
	Path     string  // the lease file (or directory) concerned
	Holder   *Record // the holder's record, when one was read
	Reason   string  // why, in words
	Err      error   // a sentinel above, or the underlying OS error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("reservation: ")
	b.WriteString(e.Op)
	if e.Resource != "" {
		fmt.Fprintf(&b, " %q", e.Resource)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "reservation: "))
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Holder != nil {
		fmt.Fprintf(&b, " (holder: %s)", e.Holder.Owner.Describe())
		fmt.Fprintf(&b, " [purpose %q, generation %d, expires %s]", e.Holder.Purpose, e.Holder.Generation, e.Holder.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if e.Path != "" {
		fmt.Fprintf(&b, "; file %s", e.Path)
	}
	if h := e.hint(); h != "" {
		b.WriteString("; ")
		b.WriteString(h)
	}
	return b.String()
}

// hint says what the user can do next.
func (e *Error) hint() string {
	switch {
	case errors.Is(e.Err, ErrHeld):
		return "wait for the holder to release it; if the holder has died, it can be recovered once it has expired"
	case errors.Is(e.Err, ErrMalformed):
		return "nothing was changed; inspect the file, and if no process still uses it, move it aside by hand"
	case errors.Is(e.Err, ErrOwnerAlive):
		return "stop that process or wait for it to release the lease"
	case errors.Is(e.Err, ErrOwnerUnknown):
		return "check the owner on its host and release the lease there; majlis never retires a lease whose owner may still be writing"
	case errors.Is(e.Err, ErrNotExpired):
		return "retry after the lease expires"
	case errors.Is(e.Err, ErrChanged):
		return "inspect the lease again and retry"
	case errors.Is(e.Err, ErrUnsupportedFS):
		return "put the state directory on a local filesystem (ext4, xfs, btrfs, tmpfs, apfs)"
	}
	return ""
}

// ErrorCode is reservation_failed: a lease file that could not be read
// or written, when the error wraps no sentinel of its own.
func (e *Error) ErrorCode() string { return "reservation_failed" }

// ErrorDetails are the error's facts, the details of its refusal: op,
// path, resource, the holder's record and the reason.
func (e *Error) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.Op, "path": e.Path}
	if e.Resource != "" {
		d["resource"] = e.Resource
	}
	if e.Holder != nil {
		d["holder"] = e.Holder
	}
	if e.Reason != "" {
		d["reason"] = e.Reason
	}
	return d
}
