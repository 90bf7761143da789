package admission

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// A State is a lease's state, computed from its record and the current
// time (wire.State).
type State = wire.State

// Lease states (see wire).
const (
	StateActive      = wire.StateActive
	StateQuarantined = wire.StateQuarantined
	StateReleased    = wire.StateReleased
	StateResolved    = wire.StateResolved
	StatePending     = wire.StatePending
)

// A Lease is permission for one resource (wire.Lease): holder, durable
// generation and expiry.
type Lease = wire.Lease

// row is a leases-table row as stored.
type row struct {
	id, scope, resource, key string
	subtree                  bool
	checkout, repo, holder   string
	generation               int64
	acquired, expires        int64 // unix nanoseconds
	released, resolved       sql.NullInt64
	resolvedHow              sql.NullString
	owner                    sql.NullString // procid.Owner, JSON
	state                    string         // granted or pending
	requestID                string
	pendingRequest           sql.NullString // host ledger: the two-phase request key
	admitter                 sql.NullString // host ledger: procid.Owner of the admitting process
	repoLedger               sql.NullString // host ledger: the repository ledger of the request
	tokenDigest              sql.NullString // digest of the grant's lease token; NULL before tokens
	forced                   sql.NullString // Forced, JSON: the last renew or release without the token

	gone bool // deleted in this transaction (an abandoned pending row)
}

// rowColumns lists the columns scanRow reads, in order.
const rowColumns = `id, scope, resource, key, subtree, checkout, repo, holder, generation,
	acquired_at, expires_at, released_at, resolved_at, resolved_how, owner_json, state, request_id,
	pending_request, admitter_json, repo_ledger, token_digest, forced_json`

type scanner interface{ Scan(dest ...any) error }

func scanRow(sc scanner) (row, error) {
	var r row
	err := sc.Scan(&r.id, &r.scope, &r.resource, &r.key, &r.subtree, &r.checkout, &r.repo, &r.holder,
		&r.generation, &r.acquired, &r.expires, &r.released, &r.resolved, &r.resolvedHow, &r.owner,
		&r.state, &r.requestID, &r.pendingRequest, &r.admitter, &r.repoLedger, &r.tokenDigest, &r.forced)
	return r, err
}

// live reports whether the row can still block: neither released nor
// resolved.
func (r *row) live() bool { return !r.released.Valid && !r.resolved.Valid }

// stateAt computes the row's state at now (unix nanoseconds).
func (r *row) stateAt(now int64) State {
	switch {
	case r.released.Valid:
		return StateReleased
	case r.resolved.Valid:
		return StateResolved
	case r.state == "pending":
		return StatePending
	case now < r.expires:
		return StateActive
	}
	return StateQuarantined
}

// ownerOf decodes the owner recorded in a JSON column; ok is false when
// none was recorded.
func ownerOf(col sql.NullString) (o procid.Owner, ok bool, err error) {
	if !col.Valid || col.String == "" {
		return o, false, nil
	}
	if err := json.Unmarshal([]byte(col.String), &o); err != nil {
		return o, false, fmt.Errorf("owner record %q: %w", col.String, err)
	}
	return o, true, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// lease renders the row as the API reports it.
func (r *row) lease(now int64) Lease {
	l := Lease{
		ID: r.id, Scope: Scope(r.scope), Resource: r.resource, Holder: r.holder, Generation: r.generation,
		AcquiredAt: fromNanos(r.acquired), ExpiresAt: fromNanos(r.expires), State: r.stateAt(now),
		Checkout: r.checkout, Key: r.key,
	}
	if o, ok, err := ownerOf(r.owner); err == nil && ok {
		l.OwnerPID = o.PID
	}
	if r.released.Valid {
		t := fromNanos(r.released.Int64)
		l.ReleasedAt = &t
	}
	if r.resolved.Valid {
		t := fromNanos(r.resolved.Int64)
		l.ResolvedAt = &t
		l.ResolvedHow = r.resolvedHow.String
	}
	if r.forced.Valid {
		var f Forced
		if json.Unmarshal([]byte(r.forced.String), &f) == nil {
			l.Forced = &f
		}
	}
	return l
}

// judged renders the row as lease does, and judges its recorded owner:
// a live lease whose owner is proven dead is Recoverable.
func (r *row) judged(now int64) Lease {
	l := r.lease(now)
	l.Recoverable = r.ownerDead()
	return l
}

// ownerDead reports whether the row is live and its recorded owner
// process is proven dead.
func (r *row) ownerDead() bool {
	if !r.live() || r.state == "pending" {
		return false
	}
	o, ok, err := ownerOf(r.owner)
	if err != nil || !ok {
		return false
	}
	live, _ := procid.Judge(o)
	return live == procid.Dead
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
