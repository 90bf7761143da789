package admission

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Renew extends leases of req.Holder to now + TTL. Only active leases can
// be renewed: a quarantined one refuses with ErrQuarantined (its holder
// must release it), a released, resolved or pending one with ErrNotFound,
// another holder's with ErrNotHolder. Every named lease is checked before
// any is renewed. Without IDs, the holder's active leases are renewed and
// its quarantined ones reported as warnings; ErrQuarantined when only
// quarantined ones remain, ErrNotFound when it holds none.
func (s *Service) renewLocal(ctx context.Context, req RenewRequest) (*RenewResult, error) {
	const op = "renew"
	if err := checkHolder(op, req.Holder); err != nil {
		return nil, err
	}
	ttl, err := checkTTL(op, req.TTL)
	if err != nil {
		return nil, err
	}
	ids, err := checkIDs(op, req.IDs, req.RequestID)
	if err != nil {
		return nil, err
	}
	digest := digestOf(struct {
		Op, Holder string
		TTL        int64
		IDs        []string
	}{op, req.Holder, int64(ttl), ids})
	var res RenewResult
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
	auth := authority{token: req.Token, force: req.Force, servesOthers: s.servesOthers}
	if req.Token != "" {
		if err := checkToken(op, req.Token); err != nil {
			return nil, err
		}
	}
	now := s.nanos()
	for _, id := range ids { // refuse before any change
		if err := renewable(op, located[id].row, req.Holder, now); err != nil {
			return nil, err
		}
	}
	if err := s.preauthorize(ctx, op, auth, ledgers, req.Holder, ids, located, func(r row) bool { return r.stateAt(now) == StateActive }); err != nil {
		return nil, err
	}
	out := &RenewResult{Leases: []Lease{}, Warnings: []Warning{}, RequestID: req.RequestID}
	for _, l := range ledgers {
		if err := s.renewIn(ctx, l, req, ids, located, auth, ttl, out); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 && len(out.Leases) == 0 {
		if len(out.Warnings) > 0 {
			l := out.Warnings[0].Lease
			return nil, &Error{Op: op, Resource: l.Resource, Err: ErrQuarantined,
				Reason: fmt.Sprintf("every lease of %s is quarantined (lease %s expired at %s)", req.Holder, l.ID, l.ExpiresAt.Format(time.RFC3339)),
				Hint:   "release them and acquire again", Details: map[string]any{"holder": req.Holder}}
		}
		return nil, &Error{Op: op, Err: ErrNotFound, Reason: req.Holder + " holds no lease", Hint: "acquire leases first", Details: map[string]any{"holder": req.Holder}}
	}
	if err := s.record(ctx, op, req.RequestID, digest, out); err != nil {
		return nil, err
	}
	return out, nil
}

// renewIn renews, in one transaction of ledger l, the leases of req that
// l holds, appending them (and the quarantined ones it had to skip, as
// warnings) to out.
func (s *Service) renewIn(ctx context.Context, l *ledger, req RenewRequest, ids []string, located map[string]located, auth authority,
	ttl time.Duration, out *RenewResult) error {
	const op = "renew"
	return l.tx(ctx, op, func(c *sql.Conn) error {
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		rows, err := s.selectRows(ctx, c, l, req.Holder, ids, located)
		if err != nil {
			return err
		}
		var renewed []string
		var evs []event
		for _, r := range rows {
			if len(ids) > 0 {
				if err := renewable(op, r, req.Holder, now); err != nil {
					return err
				}
			} else if r.stateAt(now) != StateActive {
				other := r.lease(now)
				out.Warnings = append(out.Warnings, Warning{Code: "quarantined", Policy: "", Resource: r.resource, Lease: &other,
					Message: fmt.Sprintf("lease %s (%s) expired at %s without release and cannot be renewed; release it", r.id, r.resource,
						other.ExpiresAt.Format(time.RFC3339))})
				continue
			}
			forced, err := auth.authorize(op, r)
			if err != nil {
				return err
			}
			if forced {
				if err := recordForced(ctx, c, now, op, &r); err != nil {
					return err
				}
			}
			r.expires = now + int64(ttl)
			renewed = append(renewed, r.id)
			evs = append(evs, event{kind: "renew", holder: r.holder, leaseID: r.id, detail: map[string]any{"expires_at": fromNanos(r.expires)}})
			out.Leases = append(out.Leases, r.lease(now))
		}
		if err := updateRows(ctx, c, `expires_at`, now+int64(ttl), renewed); err != nil {
			return err
		}
		return appendEvents(ctx, c, now, evs)
	})
}

// preauthorize checks, before any ledger changes, that the caller may act
// on every lease the operation will touch (those for which applies holds),
// so that a refusal in one ledger never follows a change in another. The
// transactions check again.
func (s *Service) preauthorize(ctx context.Context, op string, auth authority, ledgers []*ledger, holder string, ids []string, where map[string]located, applies func(row) bool) error {
	var rows []row
	if len(ids) > 0 {
		for _, id := range ids {
			rows = append(rows, where[id].row)
		}
	} else {
		for _, l := range ledgers {
			q := `SELECT ` + rowColumns + ` FROM leases WHERE holder = ? AND state = 'granted'` + liveClause
			args := []any{holder}
			if l.kind == kindHost {
				q += ` AND repo = ?`
				args = append(args, s.repoID)
			}
			rs, err := queryRows(ctx, l.db, q, args...)
			if err != nil {
				return l.fail(op, err)
			}
			rows = append(rows, rs...)
		}
	}
	for _, r := range rows {
		if !applies(r) {
			continue
		}
		if _, err := auth.authorize(op, r); err != nil {
			return err
		}
	}
	return nil
}

// renewable says whether holder may renew r now.
func renewable(op string, r row, holder string, now int64) error {
	l := r.lease(now)
	switch {
	case r.holder != holder:
		return &Error{Op: op, Resource: r.resource, Err: ErrNotHolder,
			Reason: fmt.Sprintf("lease %s belongs to %s, not %s", r.id, r.holder, holder)}
	case l.State == StateQuarantined:
		return &Error{Op: op, Resource: r.resource, Err: ErrQuarantined,
			Reason: fmt.Sprintf("lease %s expired at %s without release; expiry does not prove its writer stopped, so it cannot be renewed", r.id, l.ExpiresAt.Format(time.RFC3339)),
			Hint:   "release it and acquire again", Details: map[string]any{"holder": holder, "lease": r.id}}
	case l.State != StateActive:
		return &Error{Op: op, Resource: r.resource, Err: ErrNotFound,
			Reason: fmt.Sprintf("lease %s is %s, not active", r.id, l.State), Hint: "acquire the resource again"}
	}
	return nil
}
