package admission

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
)

// An evaluation is the admission of some targets inside one transaction.
type evaluation struct {
	s   *Service
	l   *ledger
	c   *sql.Conn
	p   *prepared
	idx []int // indices into p.targets
	now int64
	pol PolicySet

	rows      map[int]row // per target: the new or reused lease
	reused    map[int]bool
	warnings  []Warning
	decided   []string
	conflicts []Conflict
	// quarantined: some blocking conflict is with a quarantined lease.
	quarantined bool
	warned      map[string]bool
}

// evaluate reads the policy and every candidate conflict of the targets at
// idx, settling on the way what can be settled: quarantined leases whose
// recorded owner is proven dead are resolved, pending host rows whose
// admitter is proven dead are granted or deleted.
func (s *Service) evaluate(ctx context.Context, l *ledger, c *sql.Conn, p *prepared, idx []int) (*evaluation, error) {
	now, err := s.ledgerNow(ctx, c)
	if err != nil {
		return nil, err
	}
	e := &evaluation{s: s, l: l, c: c, p: p, idx: idx, now: now, pol: DefaultPolicy(),
		rows: map[int]row{}, reused: map[int]bool{}, warned: map[string]bool{}, decided: []string{}}
	if l.kind == kindHost {
		if err := e.pickPorts(ctx, c, idx); err != nil {
			return nil, err
		}
	}
	if err := e.checkTokenUse(ctx); err != nil {
		return nil, err
	}
	if l.kind == kindRepository {
		if err := s.guardCheckouts(ctx, p, idx); err != nil {
			return nil, err
		}
		if e.pol, err = readPolicy(ctx, c); err != nil {
			return nil, err
		}
	}
	// Candidates are read in chunks of targets, one query each; a row
	// settled on the way (resolved, confirmed, deleted) is updated in
	// place, so later targets see what the transaction now holds.
	const chunk = 200
	for lo := 0; lo < len(idx); lo += chunk {
		part := idx[lo:min(lo+chunk, len(idx))]
		ts := make([]target, len(part))
		for k, i := range part {
			ts[k] = p.targets[i]
		}
		cands, err := candidates(ctx, c, ts)
		if err != nil {
			return nil, err
		}
		for k, i := range part {
			for j := range cands {
				if r := &cands[j]; !r.gone && r.live() {
					if err := e.consider(ctx, i, ts[k], r); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return e, nil
}

// guardCheckouts asks the guard about each checkout of the targets at idx,
// inside the repository ledger's write transaction.
func (s *Service) guardCheckouts(ctx context.Context, p *prepared, idx []int) error {
	if s.guard == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, i := range idx {
		co := p.targets[i].checkout
		if co == "" || seen[co] {
			continue
		}
		seen[co] = true
		if err := s.guard(ctx, co); err != nil {
			var ae *Error
			if !errors.As(err, &ae) {
				err = &Error{Op: "acquire", Path: co, Err: err}
			}
			return err
		}
	}
	return nil
}

const liveClause = ` AND released_at IS NULL AND resolved_at IS NULL`

// candidates returns, in one query, the live rows that may overlap any
// of ts: host rows of the same names, file rows of the same keys, intent
// rows at or above the keys, and every file or intent row below a subtree.
// Only committed rows are read, inside the write transaction; classify
// decides which really overlap.
func candidates(ctx context.Context, c *sql.Conn, ts []target) ([]row, error) {
	var hosts, files, intents []any
	var rangeArgs []any
	seen := map[string]bool{}
	add := func(list *[]any, prefix, key string) {
		if !seen[prefix+key] {
			seen[prefix+key] = true
			*list = append(*list, key)
		}
	}
	everything := false
	for _, t := range ts {
		if t.scope == ScopeHost {
			add(&hosts, "h", t.key)
			continue
		}
		add(&files, "f", t.key)
		for _, a := range ancestors(t.key) {
			add(&intents, "i", a.(string))
		}
		switch {
		case t.subtree && t.key == "":
			everything = true
		case t.subtree:
			// Keys strictly below t.key: from "k/" up to "k0" ('0' follows '/').
			rangeArgs = append(rangeArgs, t.key+"/", t.key+"0")
		}
	}
	// One SELECT per kind of term, joined with UNION ALL: each is an
	// index search on leases_live, where an OR of the terms would scan it.
	in := func(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
	sel := `SELECT ` + rowColumns + ` FROM leases WHERE `
	var parts []string
	var args []any
	if len(hosts) > 0 {
		parts = append(parts, sel+`scope = 'host' AND key IN (`+in(len(hosts))+`)`+liveClause)
		args = append(args, hosts...)
	}
	if everything {
		parts = append(parts, sel+`scope IN ('file', 'intent')`+liveClause)
	} else if len(files) > 0 {
		parts = append(parts,
			sel+`scope = 'file' AND key IN (`+in(len(files))+`)`+liveClause,
			sel+`scope = 'intent' AND key IN (`+in(len(intents))+`)`+liveClause)
		args = append(append(args, files...), intents...)
		for k := 0; k < len(rangeArgs); k += 2 {
			for _, scope := range []string{"file", "intent"} {
				parts = append(parts, sel+`scope = '`+scope+`' AND key >= ? AND key < ?`+liveClause)
				args = append(args, rangeArgs[k], rangeArgs[k+1])
			}
		}
	}
	rows, err := queryRows(ctx, c, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	// A row met by several terms is considered once.
	out := rows[:0]
	ids := map[string]bool{}
	for _, r := range rows {
		if !ids[r.id] {
			ids[r.id] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// ancestors returns "" (the root) and every prefix of key that ends at a
// path component, key included.
func ancestors(key string) []any {
	out := []any{""}
	if key == "" {
		return out
	}
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			out = append(out, key[:i])
		}
	}
	return append(out, key)
}

// classify returns the policy key deciding a conflict between target t and
// the existing row r, and why they conflict; "" when they do not.
func classify(t target, r *row) (key, reason string) {
	rs := Scope(r.scope)
	if t.scope == ScopeHost || rs == ScopeHost {
		if t.scope == rs && t.key == r.key {
			return PolicyHostSingleton, "host name " + t.key + " is a machine-wide singleton"
		}
		return "", ""
	}
	if !overlaps(t.key, t.subtree, r.key, r.subtree) {
		return "", ""
	}
	if t.checkout == r.checkout {
		return PolicySameCheckoutConflict, fmt.Sprintf("%s overlaps %s in the same checkout", t.resource, r.resource)
	}
	if t.scope == ScopeFile && rs == ScopeFile {
		return "", "" // checkouts are isolated
	}
	return PolicyCrossWorktreeOverlap, fmt.Sprintf("%s overlaps %s in another worktree (%s)", t.resource, r.resource, r.checkout)
}

func warningCode(policy string) string {
	if policy == PolicyCrossWorktreeOverlap {
		return "intent_overlap"
	}
	return "checkout_conflict"
}

func (e *evaluation) decide(key string) {
	if !slices.Contains(e.decided, key) {
		e.decided = append(e.decided, key)
	}
}

// consider weighs one existing row against target i.
func (e *evaluation) consider(ctx context.Context, i int, t target, r *row) error {
	st := r.stateAt(e.now)
	pendingWhy := ""
	if st == StatePending {
		gone, why, err := e.settleDeadAdmitter(ctx, r)
		if err != nil || gone {
			r.gone = gone
			return err
		}
		pendingWhy = why
		st = r.stateAt(e.now)
	}
	if st == StateQuarantined {
		resolved, err := e.resolveIfOwnerDead(ctx, r)
		if err != nil || resolved {
			return err
		}
	}
	key, reason := classify(t, r)
	if key == "" {
		return nil
	}
	if r.holder == e.p.holder && st == StateActive {
		// The same holder never conflicts with its own active leases; the
		// exact same resource in the same checkout is returned unchanged.
		if _, ok := e.rows[i]; !ok && Scope(r.scope) == t.scope && r.key == t.key && r.subtree == t.subtree && r.checkout == t.checkout {
			e.rows[i] = *r
			e.reused[i] = true
		}
		return nil
	}
	other := r.lease(e.now)
	e.decide(key)
	if st == StatePending {
		e.conflicts = append(e.conflicts, Conflict{Resource: t.resource, Lease: other, Policy: key,
			Reason: reason + "; its admission by another process has not finished (" + pendingWhy + ")"})
		return nil
	}
	if st == StateQuarantined {
		reason += fmt.Sprintf("; lease %s of %s expired at %s without release (quarantined)", r.id, r.holder, other.ExpiresAt.Format(time.RFC3339))
	}
	switch e.pol.Value(key) {
	case Allow:
	case Warn:
		if id := t.resource + "\x00" + r.id; !e.warned[id] {
			e.warned[id] = true
			e.warnings = append(e.warnings, Warning{Code: warningCode(key), Policy: key, Resource: t.resource, Lease: &other,
				Message: fmt.Sprintf("%s (lease %s of %s); policy %s=warn", reason, r.id, r.holder, key)})
		}
	case Block:
		cf := Conflict{Resource: t.resource, Lease: other, Policy: key, Reason: reason}
		if st == StateActive {
			if o, ok, err := ownerOf(r.owner); err == nil && ok {
				if live, why := procid.Judge(o); live == procid.Dead {
					cf.Recoverable = true
					cf.Reason += fmt.Sprintf("; its owner process %d is proven dead (%s): recoverable", o.PID, why)
				}
			}
		}
		e.conflicts = append(e.conflicts, cf)
		if st == StateQuarantined {
			e.quarantined = true
		}
	}
	return nil
}

// resolveIfOwnerDead lifts the quarantine of r when its recorded owner
// process is proven dead (the rule of lease recovery).
func (e *evaluation) resolveIfOwnerDead(ctx context.Context, r *row) (bool, error) {
	o, ok, err := ownerOf(r.owner)
	if err != nil || !ok {
		return false, nil // no owner, or one that cannot be read: it stays quarantined
	}
	live, why := procid.Judge(o)
	if live != procid.Dead {
		return false, nil
	}
	if _, err := e.c.ExecContext(ctx, `UPDATE leases SET resolved_at = ?, resolved_how = 'owner_dead' WHERE id = ?`, e.now, r.id); err != nil {
		return false, err
	}
	r.resolved = sql.NullInt64{Int64: e.now, Valid: true}
	r.resolvedHow = sql.NullString{String: "owner_dead", Valid: true}
	return true, appendEvent(ctx, e.c, e.now, "resolve", r.holder, r.id, map[string]string{"how": "owner_dead", "why": why})
}

// settleDeadAdmitter settles the pending row r when the process that
// admitted it is proven dead: its attempt's rows are granted (r becomes
// granted) if the repository ledger committed the attempt, else deleted
// (gone). Otherwise r stays pending, and why says what is known.
func (e *evaluation) settleDeadAdmitter(ctx context.Context, r *row) (gone bool, why string, err error) {
	return e.s.settleDeadAdmitter(ctx, e.c, e.now, r)
}

func (e *evaluation) denied() bool { return len(e.conflicts) > 0 }

// allRecoverable reports whether every conflict is with a lease whose
// owner is proven dead.
func allRecoverable(cs []Conflict) bool {
	for _, c := range cs {
		if !c.Recoverable {
			return false
		}
	}
	return len(cs) > 0
}

// denial is the error of a denied admission.
func (e *evaluation) denial() error {
	err := &Error{Op: "acquire", Resource: e.conflicts[0].Resource, Conflicts: e.conflicts, Err: ErrHeld}
	c := e.conflicts[0]
	switch {
	case e.quarantined:
		err.Err = ErrQuarantined
		for _, c := range e.conflicts {
			if c.Lease.State == StateQuarantined {
				err.Resource = c.Resource
				err.Reason = fmt.Sprintf("%s is quarantined: lease %s of %s expired at %s without release (policy %s)",
					c.Resource, c.Lease.ID, c.Lease.Holder, c.Lease.ExpiresAt.Format(time.RFC3339), c.Policy)
				err.Hint = "its holder can release it; once its writer has stopped, resolving it lifts the quarantine"
				err.Details = map[string]any{"holder": c.Lease.Holder, "lease": c.Lease.ID}
				break
			}
		}
	case c.Lease.State == StatePending:
		err.Reason = fmt.Sprintf("%s is being admitted to %s by another process (lease %s, pending)", c.Resource, c.Lease.Holder, c.Lease.ID)
		err.Hint = "retry in a moment"
	case allRecoverable(e.conflicts):
		err.Err = ErrRecoverable
		err.Reason = fmt.Sprintf("%s is not held: lease %s of %s belongs to owner process %d, which is proven dead; the lease is recoverable",
			c.Resource, c.Lease.ID, c.Lease.Holder, c.Lease.OwnerPID)
		err.Hint = "release it (no token is needed once its owner is dead), then retry"
		err.Details = map[string]any{"holder": c.Lease.Holder, "lease": c.Lease.ID}
	default:
		err.Reason = fmt.Sprintf("%s is held by %s (lease %s, expires %s; policy %s)", c.Resource, c.Lease.Holder, c.Lease.ID,
			c.Lease.ExpiresAt.Format(time.RFC3339), c.Policy)
		err.Hint = "wait for the holder to release it and retry"
		if c.Policy != PolicyHostSingleton && c.Policy != PolicyClusterSingleton {
			err.Hint += ", or let the policy " + c.Policy + " warn instead"
		}
	}
	if n := len(e.conflicts); n > 1 {
		err.Reason += fmt.Sprintf(" (and %d more conflicts)", n-1)
	}
	return err
}

// recordDenial appends a deny event. Nothing of the request was inserted;
// the transaction commits only what evaluation settled (dead owners
// resolved, abandoned pending rows removed) and this event.
func (e *evaluation) recordDenial(ctx context.Context) error {
	type conflict struct {
		Resource string `json:"resource"`
		Lease    string `json:"lease"`
		Policy   string `json:"policy"`
	}
	d := struct {
		Resources []string   `json:"resources"`
		Conflicts []conflict `json:"conflicts"`
	}{}
	for _, i := range e.idx {
		d.Resources = append(d.Resources, e.p.targets[i].resource)
	}
	for _, c := range e.conflicts {
		d.Conflicts = append(d.Conflicts, conflict{c.Resource, c.Lease.ID, c.Policy})
	}
	return appendEvent(ctx, e.c, e.now, "deny", e.p.holder, "", d)
}

func (e *evaluation) recordWarnings(ctx context.Context) error {
	evs := make([]event, 0, len(e.warnings))
	for _, w := range e.warnings {
		evs = append(evs, event{kind: "warn", holder: e.p.holder, leaseID: w.Lease.ID,
			detail: map[string]string{"resource": w.Resource, "policy": w.Policy, "code": w.Code}})
	}
	return appendEvents(ctx, e.c, e.now, evs)
}
