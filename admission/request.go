package admission

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A recorded request: the outcome of a mutating call made with a request
// id. A retry with the same id and the same arguments returns it (evidence
// of the first call, not a new grant); the same id with other arguments is
// refused with ErrRequestConflict.
type recorded struct {
	op, digest, result string
	attempt            sql.NullString // two-phase admissions: the attempt key
}

// digestOf fingerprints a call's normalized arguments.
func digestOf(args any) string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err) // plain structs of strings and numbers
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func lookupRequest(ctx context.Context, q rowQuerier, id string) (*recorded, error) {
	rows, err := q.QueryContext(ctx, `SELECT op, args_digest, result_json, attempt FROM requests WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, rows.Err()
	}
	var r recorded
	if err := rows.Scan(&r.op, &r.digest, &r.result, &r.attempt); err != nil {
		return nil, err
	}
	return &r, rows.Err()
}

// replayInto checks a recorded request against this call: the same
// arguments decode the recorded result into out; others refuse.
func (r *recorded) replayInto(op, id, digest string, out any) error {
	if r.op != op || r.digest != digest {
		return &Error{Op: op, Err: ErrRequestConflict,
			Reason: fmt.Sprintf("request id %q was used for another %s call with other arguments (or another lease token)", id, r.op),
			Hint:   "use a new request id for a new request"}
	}
	if err := json.Unmarshal([]byte(r.result), out); err != nil {
		return &Error{Op: op, Err: ErrMalformed, Reason: fmt.Sprintf("recorded result of request %q: %v", id, err)}
	}
	return nil
}

func recordRequest(ctx context.Context, c *sql.Conn, now int64, id, op, digest string, result any, attempt string) error {
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	var att sql.NullString
	if attempt != "" {
		att = sql.NullString{String: attempt, Valid: true}
	}
	_, err = c.ExecContext(ctx, `INSERT INTO requests (id, op, args_digest, result_json, at, attempt) VALUES (?, ?, ?, ?, ?, ?)`,
		id, op, digest, string(b), now, att)
	return err
}

// precheck looks a request id up in both ledgers, outside any
// transaction: found reports a replayable result decoded into out; the id
// recorded with other arguments refuses. Request ids of host-only
// admissions are recorded in the host ledger, all others in the
// repository ledger; looking in both keeps one id from naming two
// requests. It is a shortcut: every transaction that records an id checks
// its own ledger again under its lock.
func (s *Service) precheck(ctx context.Context, op, id, digest string, out any) (found bool, rec *recorded, err error) {
	if id == "" {
		return false, nil, nil
	}
	hl, err := s.hostLedger(ctx, false)
	if err != nil {
		return false, nil, err
	}
	for _, l := range []*ledger{s.repo, hl} {
		if l == nil {
			continue
		}
		rec, err = lookupRequest(ctx, l.db, id)
		if err != nil {
			return false, nil, l.fail(op, err)
		}
		if rec != nil {
			if err := rec.replayInto(op, id, digest, out); err != nil {
				return false, nil, l.fail(op, err)
			}
			return true, rec, nil
		}
	}
	return false, nil, nil
}

// appendEvent appends one event; detail is encoded as JSON.
func appendEvent(ctx context.Context, c *sql.Conn, now int64, kind, holder, leaseID string, detail any) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, `INSERT INTO events (at, kind, holder, lease_id, detail_json) VALUES (?, ?, ?, ?, ?)`,
		now, kind, holder, leaseID, string(b))
	return err
}

// An event is one row for appendEvents.
type event struct {
	kind, holder, leaseID string
	detail                any
}

// appendEvents appends events with multi-row statements.
func appendEvents(ctx context.Context, c *sql.Conn, now int64, evs []event) error {
	const chunk = 1000
	for lo := 0; lo < len(evs); lo += chunk {
		part := evs[lo:min(lo+chunk, len(evs))]
		args := make([]any, 0, 5*len(part))
		for _, ev := range part {
			b, err := json.Marshal(ev.detail)
			if err != nil {
				return err
			}
			args = append(args, now, ev.kind, ev.holder, ev.leaseID, string(b))
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO events (at, kind, holder, lease_id, detail_json) VALUES `+
			placeholders(len(part), 5), args...); err != nil {
			return err
		}
	}
	return nil
}

func checkRequestID(op, id string) error {
	if id != "" && !validName(id) {
		return &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("request id %q is not 1 to %d printable characters", id, maxName)}
	}
	return nil
}
