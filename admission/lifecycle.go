package admission

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// A RenewRequest extends leases of a holder.
type RenewRequest struct {
	Holder string
	TTL    time.Duration // new lifetime from now; 0 means DefaultTTL
	// IDs names the leases to renew. Empty: every active lease of Holder
	// in the repository ledger, and its host leases acquired for this
	// repository.
	IDs       []string
	RequestID string
	// Token is the lease token of the grant; Force renews without it
	// (recorded). See Release.
	Token string
	Force bool
}

// RenewResult is wire.RenewResult: the result type is defined once, in the wire contract.
type RenewResult = wire.RenewResult

// A ReleaseRequest gives leases back.
type ReleaseRequest struct {
	Holder string
	// IDs names the leases to release. Empty: every active or
	// quarantined lease of Holder in the repository ledger, and its host
	// leases acquired for this repository.
	IDs       []string
	RequestID string
	// Token is the lease token of the grant. A lease granted with a token
	// is released only with it, or by its owner process (or a descendant
	// of it), or by anyone once that owner is proven dead; otherwise Force
	// releases it, and the ledger records who (event "force", and the
	// lease's Forced). Leases granted before tokens need none.
	Token string
	Force bool
}

// ReleaseResult is wire.LeaseReleaseResult: the result type is defined once, in the wire contract.
type ReleaseResult = wire.LeaseReleaseResult

// A ResolveRequest lifts the quarantine of one lease.
type ResolveRequest struct {
	ID string
	// WriterStopped attests that the lease's writer has stopped; Resolve
	// refuses without it.
	WriterStopped bool
	RequestID     string
}

// A ListRequest selects leases.
type ListRequest struct {
	Holder string // empty: every holder
	// All includes released and resolved leases; otherwise only active,
	// quarantined and pending ones are listed.
	All bool
}

// Release ends leases of req.Holder: active and quarantined ones become
// released (which lifts a quarantine). With IDs, every named lease must
// exist (ErrNotFound) and belong to the holder (ErrNotHolder), and those
// already released or resolved are reported unchanged; a pending host
// lease still being admitted cannot be released (ErrNotFound). Without
// IDs, every such lease of the holder is released; none is not an error.
// A pending host lease whose admitting process is proven dead is settled
// first: granted, and so released, if its repository transaction
// committed; removed otherwise.
func (s *Service) releaseLocal(ctx context.Context, req ReleaseRequest) (*ReleaseResult, error) {
	const op = "release"
	if err := checkHolder(op, req.Holder); err != nil {
		return nil, err
	}
	ids, err := checkIDs(op, req.IDs, req.RequestID)
	if err != nil {
		return nil, err
	}
	digest := digestOf(struct {
		Op, Holder string
		IDs        []string
	}{op, req.Holder, ids})
	var res ReleaseResult
	if found, _, err := s.precheck(ctx, op, req.RequestID, digest, &res); err != nil {
		return nil, err
	} else if found {
		res.Replayed = true
		return &res, nil
	}
	ledgers, located, err := s.targetLedgers(ctx, op, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		// A pending row is judged inside the transaction, once settled.
		if r := located[id].row; r.holder != req.Holder {
			return nil, releasable(op, r, req.Holder)
		}
	}
	auth := authority{token: req.Token, force: req.Force, servesOthers: s.servesOthers}
	if req.Token != "" {
		if err := checkToken(op, req.Token); err != nil {
			return nil, err
		}
	}
	if err := s.preauthorize(ctx, op, auth, ledgers, req.Holder, ids, located, func(r row) bool { return r.live() }); err != nil {
		return nil, err
	}
	out := &ReleaseResult{Leases: []Lease{}, RequestID: req.RequestID}
	for _, l := range ledgers {
		err := l.tx(ctx, op, func(c *sql.Conn) error {
			now, err := s.ledgerNow(ctx, c)
			if err != nil {
				return err
			}
			rows, err := s.selectRows(ctx, c, l, req.Holder, ids, located)
			if err != nil {
				return err
			}
			if l.kind == kindHost {
				if rows, err = s.settleForRelease(ctx, c, now, req.Holder, ids, rows); err != nil {
					return err
				}
			}
			var released []string
			var evs []event
			for _, r := range rows {
				if err := releasable(op, r, req.Holder); err != nil {
					return err
				}
				if r.live() {
					forced, err := auth.authorize(op, r)
					if err != nil {
						return err
					}
					if forced {
						if err := recordForced(ctx, c, now, op, &r); err != nil {
							return err
						}
					}
					detail := map[string]string{"resource": r.resource}
					if !forced && auth.recovers(r) {
						detail["how"] = "owner_dead" // a recovery: its owner is proven dead
					}
					r.released = sql.NullInt64{Int64: now, Valid: true}
					released = append(released, r.id)
					evs = append(evs, event{kind: "release", holder: r.holder, leaseID: r.id, detail: detail})
				}
				out.Leases = append(out.Leases, r.lease(now))
			}
			if err := updateRows(ctx, c, `released_at`, now, released); err != nil {
				return err
			}
			return appendEvents(ctx, c, now, evs)
		})
		if err != nil {
			return nil, err
		}
	}
	if err := s.record(ctx, op, req.RequestID, digest, out); err != nil {
		return nil, err
	}
	return out, nil
}

// settleForRelease settles, in a transaction of the host ledger, the
// pending rows a release meets whose admitting process is proven dead:
// granted if their repository transaction committed (so that this release
// ends them, instead of a later admission or a retry of the request
// confirming them after the holder let go), removed otherwise. Without
// ids, the holder's pending rows of this repository are looked at too;
// those still being admitted are left alone.
func (s *Service) settleForRelease(ctx context.Context, c *sql.Conn, now int64, holder string, ids []string, rows []row) ([]row, error) {
	if len(ids) == 0 {
		pending, err := queryRows(ctx, c, `SELECT `+rowColumns+` FROM leases WHERE holder = ? AND repo = ? AND state = 'pending'`+
			liveClause+` ORDER BY acquired_at, id`, holder, s.repoID)
		if err != nil {
			return nil, err
		}
		rows = append(rows, pending...)
	}
	out := rows[:0]
	for i := range rows {
		r := rows[i]
		if r.live() && r.state == "pending" {
			gone, _, err := s.settleDeadAdmitter(ctx, c, now, &r)
			if err != nil {
				return nil, err
			}
			if gone || (r.state == "pending" && len(ids) == 0) {
				continue
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func releasable(op string, r row, holder string) error {
	switch {
	case r.holder != holder:
		return &Error{Op: op, Resource: r.resource, Err: ErrNotHolder,
			Reason: fmt.Sprintf("lease %s belongs to %s, not %s", r.id, r.holder, holder)}
	case r.live() && r.state == "pending":
		return &Error{Op: op, Resource: r.resource, Err: ErrNotFound,
			Reason: fmt.Sprintf("lease %s is pending: its admission has not finished", r.id), Hint: "retry in a moment"}
	}
	return nil
}

// Resolve lifts the quarantine of lease req.ID on the caller's attestation
// that its writer has stopped (WriterStopped, required: ErrInvalid
// without). An active, released or pending lease refuses with
// ErrNotQuarantined; a resolved one is returned unchanged.
func (s *Service) resolveLocal(ctx context.Context, req ResolveRequest) (*Lease, error) {
	const op = "resolve"
	if !req.WriterStopped {
		return nil, &Error{Op: op, Resource: req.ID, Err: ErrInvalid,
			Reason: "resolving a quarantine needs the attestation that the writer has stopped",
			Hint:   "check that the lease's writer is gone, then attest it", Details: map[string]any{"argument": "writer_stopped"}}
	}
	ids, err := checkIDs(op, []string{req.ID}, req.RequestID)
	if err != nil {
		return nil, err
	}
	digest := digestOf(struct{ Op, ID string }{op, req.ID})
	var res Lease
	if found, _, err := s.precheck(ctx, op, req.RequestID, digest, &res); err != nil {
		return nil, err
	} else if found {
		return &res, nil
	}
	ledgers, located, err := s.targetLedgers(ctx, op, ids)
	if err != nil {
		return nil, err
	}
	var out Lease
	err = ledgers[0].tx(ctx, op, func(c *sql.Conn) error {
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		rows, err := s.selectRows(ctx, c, ledgers[0], "", ids, located)
		if err != nil {
			return err
		}
		r := rows[0]
		switch st := r.stateAt(now); st {
		case StateResolved:
		case StateQuarantined:
			r.resolved = sql.NullInt64{Int64: now, Valid: true}
			r.resolvedHow = sql.NullString{String: "writer_stopped", Valid: true}
			if _, err := c.ExecContext(ctx, `UPDATE leases SET resolved_at = ?, resolved_how = 'writer_stopped' WHERE id = ?`, now, r.id); err != nil {
				return err
			}
			if err := appendEvent(ctx, c, now, "resolve", r.holder, r.id, map[string]string{"how": "writer_stopped"}); err != nil {
				return err
			}
		default:
			l := r.lease(now)
			e := &Error{Op: op, Resource: r.resource, Err: ErrNotQuarantined, Reason: fmt.Sprintf("lease %s is %s", r.id, st)}
			switch st {
			case StateActive:
				e.Reason += " until " + l.ExpiresAt.Format(time.RFC3339)
				e.Hint = fmt.Sprintf("its holder %s can release it; only an expired, unreleased lease needs resolving", r.holder)
			case StatePending:
				e.Hint = "its admission has not finished; retry in a moment"
			}
			return e
		}
		out = r.lease(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.record(ctx, op, req.RequestID, digest, out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List returns leases of the repository ledger and of the host ledger
// (host singletons of every repository on the machine), ordered by
// acquisition time. States are computed now; List changes nothing, so a
// quarantined lease whose owner died is listed as quarantined until the
// next admission that meets it resolves it.
func (s *Service) listLocal(ctx context.Context, req ListRequest) ([]Lease, error) {
	hl, err := s.hostLedger(ctx, false)
	if err != nil {
		return nil, err
	}
	out := []Lease{}
	for _, l := range []*ledger{s.repo, hl} {
		if l == nil {
			continue
		}
		now, err := s.ledgerNow(ctx, l.db)
		if err != nil {
			return nil, l.fail("list", err)
		}
		q := `SELECT ` + rowColumns + ` FROM leases WHERE 1 = 1`
		var args []any
		if req.Holder != "" {
			q += ` AND holder = ?`
			args = append(args, req.Holder)
		}
		if !req.All {
			q += liveClause
		}
		rows, err := queryRows(ctx, l.db, q, args...)
		if err != nil {
			return nil, l.fail("list", err)
		}
		for _, r := range rows {
			out = append(out, r.judged(now))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].AcquiredAt.Equal(out[j].AcquiredAt) {
			return out[i].AcquiredAt.Before(out[j].AcquiredAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// LiveLeases returns the leases that show a task is still at work: those
// of holder, or taken in the checkout at checkoutRoot (a physical path;
// "" for none), in the repository ledger, and holder's host leases taken
// from this repository. A lease counts while it is active or quarantined.
// One whose recorded owner process is proven dead is returned Recoverable:
// it keeps nothing in use, and a release without its token retires it
// (the provider's reclaim does, recording the recovery). The provider's
// reclaim refuses while any other is returned.
func (s *Service) liveLocal(ctx context.Context, holder, checkoutRoot string) ([]Lease, error) {
	hl, err := s.hostLedger(ctx, false)
	if err != nil {
		return nil, err
	}
	queries := []struct {
		l    *ledger
		q    string
		args []any
	}{
		{s.repo, `SELECT ` + rowColumns + ` FROM leases WHERE (holder = ? OR checkout = ?) AND state = 'granted'` + liveClause, []any{holder, checkoutRoot}},
		{hl, `SELECT ` + rowColumns + ` FROM leases WHERE holder = ? AND repo = ? AND state = 'granted'` + liveClause, []any{holder, s.repoID}},
	}
	out := []Lease{}
	for _, q := range queries {
		if q.l == nil {
			continue
		}
		// Read under the ledger's write lock (BEGIN IMMEDIATE), which
		// changes nothing but waits for any admission under way: one that
		// began before the caller's reclaim reservation was registered,
		// and so may not have seen it, has committed by the time this
		// reads (see Options.Guard).
		err := q.l.tx(ctx, "list", func(c *sql.Conn) error {
			now, err := s.ledgerNow(ctx, c)
			if err != nil {
				return err
			}
			rows, err := queryRows(ctx, c, q.q, q.args...)
			if err != nil {
				return err
			}
			for _, r := range rows {
				out = append(out, r.judged(now))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func queryRows(ctx context.Context, q rowQuerier, query string, args ...any) ([]row, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// checkIDs validates lease ids (deduplicated, sorted) and a request id.
func checkIDs(op string, ids []string, requestID string) ([]string, error) {
	if err := checkRequestID(op, requestID); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !validName(id) || strings.ContainsAny(id, " ") {
			return nil, &Error{Op: op, Resource: id, Err: ErrInvalid, Reason: fmt.Sprintf("%q is not a lease id", id),
				Hint: "lease ids look like L-0123456789abcdef", Details: map[string]any{"argument": "lease_id"}}
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// located is where a named lease was found.
type located struct {
	l   *ledger
	row row
}

// targetLedgers returns the ledgers an operation on ids acts on, host
// first and the repository ledger last, and where each id lives; an id in
// neither ledger refuses with ErrNotFound. Without ids, both ledgers (the
// host one only if it exists).
func (s *Service) targetLedgers(ctx context.Context, op string, ids []string) ([]*ledger, map[string]located, error) {
	hl, err := s.hostLedger(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		if hl == nil {
			return []*ledger{s.repo}, nil, nil
		}
		return []*ledger{hl, s.repo}, nil, nil
	}
	where := map[string]located{}
	useHost, useRepo := false, false
	for _, id := range ids {
		for _, l := range []*ledger{s.repo, hl} {
			if l == nil {
				continue
			}
			rows, err := queryRows(ctx, l.db, `SELECT `+rowColumns+` FROM leases WHERE id = ?`, id)
			if err != nil {
				return nil, nil, l.fail(op, err)
			}
			if len(rows) == 1 {
				where[id] = located{l: l, row: rows[0]}
				useHost = useHost || l == hl
				useRepo = useRepo || l == s.repo
				break
			}
		}
		if _, ok := where[id]; !ok {
			return nil, nil, &Error{Op: op, Resource: id, Err: ErrNotFound, Reason: "no lease " + id,
				Details: map[string]any{"not_found": "lease"}}
		}
	}
	var ls []*ledger
	if useHost {
		ls = append(ls, hl)
	}
	if useRepo {
		ls = append(ls, s.repo)
	}
	return ls, where, nil
}

// selectRows reads, inside a transaction of l, the named leases that live
// in l, or without ids the live granted leases of holder (in the host
// ledger: those acquired for this repository).
func (s *Service) selectRows(ctx context.Context, c *sql.Conn, l *ledger, holder string, ids []string, where map[string]located) ([]row, error) {
	if len(ids) == 0 {
		q := `SELECT ` + rowColumns + ` FROM leases WHERE holder = ? AND state = 'granted'` + liveClause
		args := []any{holder}
		if l.kind == kindHost {
			q += ` AND repo = ?`
			args = append(args, s.repoID)
		}
		return queryRows(ctx, c, q+` ORDER BY acquired_at, id`, args...)
	}
	var out []row
	for _, id := range ids {
		if where[id].l != l {
			continue
		}
		rows, err := queryRows(ctx, c, `SELECT `+rowColumns+` FROM leases WHERE id = ?`, id)
		if err != nil {
			return nil, err
		}
		if len(rows) != 1 {
			// A pending row deleted since it was located.
			return nil, &Error{Op: "lease", Resource: id, Err: ErrNotFound, Reason: "no lease " + id}
		}
		out = append(out, rows[0])
	}
	return out, nil
}

// updateRows sets column to value in the leases ids.
func updateRows(ctx context.Context, c *sql.Conn, column string, value int64, ids []string) error {
	const chunk = 500
	for lo := 0; lo < len(ids); lo += chunk {
		part := ids[lo:min(lo+chunk, len(ids))]
		args := []any{value}
		for _, id := range part {
			args = append(args, id)
		}
		q := `UPDATE leases SET ` + column + ` = ? WHERE id IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(part)), ", ") + `)`
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	return nil
}

// record stores the result of a renew, release or resolve made with a
// request id, in a transaction of its own: those operations are
// idempotent, so a crash before the record only makes a retry do them
// again.
func (s *Service) record(ctx context.Context, op, id, digest string, result any) error {
	if id == "" {
		return nil
	}
	return s.repo.tx(ctx, op, func(c *sql.Conn) error {
		rec, err := lookupRequest(ctx, c, id)
		if err != nil {
			return err
		}
		if rec != nil {
			var discard any
			return rec.replayInto(op, id, digest, &discard)
		}
		return recordRequest(ctx, c, s.nanos(), id, op, digest, result, "")
	})
}
