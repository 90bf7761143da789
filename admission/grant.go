package admission

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// insertAll inserts a lease for every target not reused, each with the
// next generation of its resource; pending marks host rows of a two-phase
// admission. Rows are written with multi-row statements (a few per
// admission, not a few per lease).
func (e *evaluation) insertAll(ctx context.Context, pending *pendingInfo) error {
	if e.now > math.MaxInt64-int64(e.p.ttl) {
		return &Error{Op: "acquire", Err: ErrInvalid, Reason: "the expiry time is not representable"}
	}
	var todo []int
	for _, i := range e.idx {
		if !e.reused[i] {
			todo = append(todo, i)
		}
	}
	const chunk = 400 // 22 parameters a lease row, well under SQLite's limit
	for lo := 0; lo < len(todo); lo += chunk {
		part := todo[lo:min(lo+chunk, len(todo))]
		gens, err := e.nextGenerations(ctx, part)
		if err != nil {
			return err
		}
		var args []any
		var evs []event
		for _, i := range part {
			t := e.p.targets[i]
			r := row{id: newLeaseID(), scope: string(t.scope), resource: t.resource, key: t.key, subtree: t.subtree,
				checkout: t.checkout, repo: e.s.repoID, holder: e.p.holder, generation: gens[genKey{t.scope, t.key, t.subtree, t.checkout}],
				acquired: e.now, expires: e.now + int64(e.p.ttl), owner: e.p.owner, state: "granted", requestID: e.p.requestID,
				tokenDigest: sql.NullString{String: tokenDigest(e.p.token), Valid: true}}
			if sr, ok := e.p.shared.record(i); ok {
				// A shared intent: the shared ledger's id and generation.
				r.id, r.generation = sr.ID, sr.Generation
				if err := e.raiseGeneration(ctx, t, sr.Generation); err != nil {
					return err
				}
			}
			if r.generation == 0 {
				return fmt.Errorf("admission: no generation was returned for %s", t.resource)
			}
			kind := "grant"
			d := map[string]any{"resource": r.resource, "generation": r.generation, "checkout": r.checkout,
				"expires_at": fromNanos(r.expires)}
			if r.requestID != "" {
				d["request_id"] = r.requestID
			}
			if pending != nil {
				kind = "pending"
				r.state = "pending"
				r.pendingRequest = sql.NullString{String: pending.attempt, Valid: true}
				r.admitter = sql.NullString{String: pending.admitter, Valid: true}
				r.repoLedger = sql.NullString{String: pending.repoLedger, Valid: true}
				d["attempt"] = pending.attempt
			}
			args = append(args, r.id, r.scope, r.resource, r.key, r.subtree, r.checkout, r.repo, r.holder, r.generation,
				r.acquired, r.expires, r.released, r.resolved, r.resolvedHow, r.owner, r.state, r.requestID,
				r.pendingRequest, r.admitter, r.repoLedger, r.tokenDigest, r.forced)
			evs = append(evs, event{kind: kind, holder: r.holder, leaseID: r.id, detail: d})
			e.rows[i] = r
		}
		if _, err := e.c.ExecContext(ctx, `INSERT INTO leases (`+rowColumns+`) VALUES `+
			placeholders(len(part), 22), args...); err != nil {
			return err
		}
		if err := appendEvents(ctx, e.c, e.now, evs); err != nil {
			return err
		}
	}
	return nil
}

// genKey identifies a resource's generation counter.
type genKey struct {
	scope    Scope
	key      string
	subtree  bool
	checkout string
}

// nextGenerations bumps the generation of each target at idx (creating it
// at 1) and returns the new values.
func (e *evaluation) nextGenerations(ctx context.Context, idx []int) (map[genKey]int64, error) {
	var args []any
	for _, i := range idx {
		t := e.p.targets[i]
		args = append(args, string(t.scope), t.key, t.subtree, t.checkout)
	}
	vals := strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, 1), ", len(idx)), ", ")
	rows, err := e.c.QueryContext(ctx, `INSERT INTO generations (scope, key, subtree, checkout, last) VALUES `+vals+`
		ON CONFLICT (scope, key, subtree, checkout) DO UPDATE SET last = last + 1
		RETURNING scope, key, subtree, checkout, last`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[genKey]int64{}
	for rows.Next() {
		var k genKey
		var last int64
		if err := rows.Scan(&k.scope, &k.key, &k.subtree, &k.checkout, &last); err != nil {
			return nil, err
		}
		out[k] = last
	}
	return out, rows.Err()
}

// raiseGeneration raises the generation counter of t to at least gen, so
// that a resource once granted by the shared ledger never goes back to a
// lower generation here.
func (e *evaluation) raiseGeneration(ctx context.Context, t target, gen int64) error {
	_, err := e.c.ExecContext(ctx, `UPDATE generations SET last = MAX(last, ?) WHERE scope = ? AND key = ? AND subtree = ? AND checkout = ?`,
		gen, string(t.scope), t.key, t.subtree, t.checkout)
	return err
}

// placeholders returns n comma-separated groups of cols "?".
func placeholders(n, cols int) string {
	group := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(group+", ", n), ", ")
}

// merge adds the warnings and policy keys of an earlier phase.
func (e *evaluation) merge(o *evaluation) {
	for _, k := range o.decided {
		e.decide(k)
	}
}

// result renders the outcome of this evaluation and, for a two-phase
// admission, of its host phase (whose pending rows are reported as they
// will be once confirmed: granted).
func (e *evaluation) result(host *evaluation) *AcquireResult {
	res := &AcquireResult{Leases: []Lease{}, Warnings: []Warning{}, DecidedBy: e.decided, Reused: []string{}, Ports: []int{}, RequestID: e.p.requestID}
	for _, t := range e.p.targets {
		if t.auto {
			res.Ports = append(res.Ports, PortOf(t.key))
		}
	}
	phases := []*evaluation{e}
	if host != nil {
		phases = append(phases, host)
	}
	sp := e.p.shared
	if sp != nil {
		for _, k := range sp.decided {
			e.decide(k)
		}
		res.DecidedBy = e.decided
	}
	for i := range e.p.targets {
		if l, ok := sp.clusterLease(i); ok {
			res.Leases = append(res.Leases, l)
			if sp.reused[i] {
				res.Reused = append(res.Reused, l.ID)
			}
			continue
		}
		for _, ph := range phases {
			r, ok := ph.rows[i]
			if !ok {
				continue
			}
			r.state = "granted"
			res.Leases = append(res.Leases, r.lease(e.now))
			if ph.reused[i] {
				res.Reused = append(res.Reused, r.id)
			}
		}
	}
	if host != nil {
		res.Warnings = append(res.Warnings, host.warnings...)
	}
	res.Warnings = append(res.Warnings, e.warnings...)
	if sp != nil {
		res.Warnings = append(res.Warnings, sp.warnings...)
	}
	return res
}

// newLeaseID returns "L-" and 16 random hex digits.
func newLeaseID() string { return "L-" + randomHex() }

func randomHex() string {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}
