package admission

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
)

// Failpoints of admission (see package failpoint).
var (
	// fpInTransaction fires inside an admission transaction, after every
	// insert and before COMMIT: a crash there must leave no grant.
	fpInTransaction = failpoint.New("admission/in-transaction")
	// fpHostPending fires in a two-phase admission after the pending host
	// rows committed and before the repository transaction: a crash there
	// leaves pending rows that the next admission meeting them removes.
	fpHostPending = failpoint.New("admission/host-pending")
	// fpRepoCommitted fires in a two-phase admission after the repository
	// transaction committed and before the host rows are confirmed: a crash
	// there leaves pending rows that the next admission meeting them (or a
	// retry with the same request id) grants.
	fpRepoCommitted = failpoint.New("admission/repo-committed")
)

// stepHook, when set, runs after every failpoint. Tests set it to kill
// the process at a point (test binaries are built without failpoints).
var stepHook func(name string)

func step(p *failpoint.Point) error {
	if err := p.Inject(); err != nil {
		return err
	}
	if stepHook != nil {
		stepHook(p.Name())
	}
	return nil
}

// maxTTL bounds a lease's lifetime, so that expiry times stay representable.
const maxTTL = 10 * 365 * 24 * time.Hour

// An AcquireRequest asks for a set of resources, all or none.
type AcquireRequest struct {
	Holder    string        // who holds the leases: 1-200 printable characters
	TTL       time.Duration // lifetime; 0 means DefaultTTL
	Resources []string      // file:PATH, intent:PATH, intent:PATH/**, intent:**, host:NAME
	// Checkout is a directory inside the worktree that file and intent
	// resources belong to; empty means Cwd (or the working directory).
	Checkout string
	// Cwd is the caller's working directory. Relative resource paths are
	// taken relative to it when it lies inside the checkout, else relative
	// to the checkout's top level. "intent:**" always means the whole
	// checkout; "intent:./**" means the subtree of Cwd.
	Cwd string
	// RequestID makes the call idempotent: a retry with the same id and
	// arguments returns the recorded result and grants nothing new.
	RequestID string
	// OwnerPID, when not 0, records that process's identity with the
	// leases: once it is proven dead, a quarantine of them lifts by itself,
	// and they can be released without their token. The process itself
	// and its descendants may renew and release them without the token.
	OwnerPID int
	// Token is the grant's secret lease token (see token.go): renewing or
	// releasing the leases needs it. Empty: Acquire generates one and
	// returns it in the result, once. A retry with the same RequestID must
	// present the same token.
	Token string
}

// An AcquireResult is a successful admission.
type AcquireResult struct {
	// Leases holds one lease per distinct requested resource, in request
	// order: new grants, or (see Reused) leases the holder already held.
	Leases   []Lease   `json:"leases"`
	Warnings []Warning `json:"warnings"`
	// DecidedBy lists the policy keys consulted (each conflict's key,
	// whatever its value decided).
	DecidedBy []string `json:"decided_by"`
	// Reused lists the ids of leases returned unchanged because the
	// holder already held that exact resource, active, in that checkout.
	Reused []string `json:"reused"`
	// Ports lists the ports picked for the host:port:auto resources, in
	// request order (their leases are host:port:N).
	Ports     []int  `json:"ports"`
	RequestID string `json:"request_id,omitempty"`
	// Replayed: the result was recorded by an earlier call with the same
	// request id; nothing was granted now, and the states are as recorded.
	Replayed bool `json:"replayed"`
	// Token is the lease token Acquire generated because none was
	// supplied. It is returned this once (the ledger keeps only its
	// digest): renewing and releasing these leases needs it.
	Token string `json:"token,omitempty"`
}

// A Warning is a conflict that policy let through, or another fact the
// caller should see.
type Warning struct {
	Code     string `json:"code"` // intent_overlap, checkout_conflict, quarantined, enforcement_gap
	Message  string `json:"message"`
	Policy   string `json:"policy"`             // the policy key that decided it
	Resource string `json:"resource,omitempty"` // the requested resource or changed path concerned
	Lease    *Lease `json:"lease,omitempty"`    // the other lease
}

// A target is one requested resource, made canonical.
type target struct {
	scope    Scope
	key      string
	subtree  bool
	checkout string // physical checkout root; "" for host
	resource string // canonical
	// auto: host:port:auto, whose key and resource are set to the port
	// picked inside the host ledger's transaction (pickPorts).
	auto bool
}

// prepared is a validated acquire call.
type prepared struct {
	holder    string
	ttl       time.Duration
	targets   []target
	owner     sql.NullString // procid.Owner of OwnerPID, JSON
	requestID string
	digest    string
	token     string // supplied or generated
	generated bool   // token was generated: return it
	portRange string // the policy's port_range, when a target is auto
}

// Acquire grants every requested resource to req.Holder, or none. File
// and intent paths are checked for safety before any ledger is touched.
// Host-only and repository-only sets are admitted in one transaction of
// their ledger; a mixed set in two phases (pending host rows, repository
// transaction, confirmation) that never leaves a usable partial grant.
//
// Refusals: ErrInvalid, ErrUnsafePath, ErrHeld (another holder's live
// lease blocks, or a host name is taken or pending), ErrQuarantined (an
// expired, unreleased lease blocks), ErrRequestConflict, ErrMalformed; the
// *Error lists the conflicts with the policy key that decided each.
func (s *Service) Acquire(ctx context.Context, req AcquireRequest) (*AcquireResult, error) {
	p, err := s.prepareAcquire(ctx, req)
	if err != nil {
		return nil, err
	}
	res, err := s.admit(ctx, p)
	if err == nil && p.generated && !res.Replayed {
		res.Token = p.token
	}
	return res, err
}

func (s *Service) admit(ctx context.Context, p *prepared) (*AcquireResult, error) {
	var hostIdx, repoIdx []int
	for i, t := range p.targets {
		if t.scope == ScopeHost {
			hostIdx = append(hostIdx, i)
		} else {
			repoIdx = append(repoIdx, i)
		}
	}
	switch {
	case len(repoIdx) == 0:
		hl, err := s.hostLedger(ctx, true)
		if err != nil {
			return nil, err
		}
		return s.admitOne(ctx, hl, p, hostIdx)
	case len(hostIdx) == 0:
		return s.admitOne(ctx, s.repo, p, repoIdx)
	}
	return s.admitMixed(ctx, p, hostIdx, repoIdx)
}

func (s *Service) prepareAcquire(ctx context.Context, req AcquireRequest) (*prepared, error) {
	const op = "acquire"
	if err := checkHolder(op, req.Holder); err != nil {
		return nil, err
	}
	ttl, err := checkTTL(op, req.TTL)
	if err != nil {
		return nil, err
	}
	if err := checkRequestID(op, req.RequestID); err != nil {
		return nil, err
	}
	token, generated := req.Token, false
	if token == "" {
		token, generated = NewToken(), true
	} else if err := checkToken(op, token); err != nil {
		return nil, err
	}
	if len(req.Resources) == 0 {
		return nil, &Error{Op: op, Err: ErrInvalid, Reason: "no resource named", Hint: "name at least one file:PATH, intent:PATH or host:NAME"}
	}
	parsed := make([]Resource, len(req.Resources))
	needCheckout := false
	for i, raw := range req.Resources {
		r, err := ParseResource(raw)
		if err != nil {
			err.(*Error).Op = op
			return nil, err
		}
		parsed[i] = r
		needCheckout = needCheckout || r.Scope != ScopeHost
	}
	var co Checkout
	if needCheckout {
		if co, err = s.checkout(ctx, op, req.Checkout, req.Cwd); err != nil {
			return nil, err
		}
	}
	batch := pathid.NewResolver() // one request's paths, resolved together
	p := &prepared{holder: req.Holder, ttl: ttl, requestID: req.RequestID, token: token, generated: generated}
	seen := map[string]bool{}
	for n, r := range parsed {
		t := target{scope: r.Scope}
		switch r.Scope {
		case ScopeHost:
			t.key = r.Raw
			t.auto = r.Raw == AutoPort
		case ScopeFile:
			t.checkout = co.Root
			t.key, err = co.key(batch, req.Cwd, r.Raw, true)
		case ScopeIntent:
			t.checkout = co.Root
			var lit string
			lit, t.subtree = r.intentParts()
			if r.Raw != "**" {
				t.key, err = co.key(batch, req.Cwd, lit, false)
			}
		}
		if err != nil {
			var ae *Error
			if errors.As(err, &ae) && ae.Resource == "" {
				ae.Resource = r.String()
			}
			return nil, err
		}
		t.resource = canonicalResource(t.scope, t.key, t.subtree)
		id := t.resource + "\x00" + t.checkout
		if t.auto {
			id += strconv.Itoa(n) // each asks for a port of its own
		}
		if !seen[id] {
			seen[id] = true
			p.targets = append(p.targets, t)
		}
	}
	if req.OwnerPID != 0 {
		if req.OwnerPID < 0 {
			return nil, &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("owner pid %d is not a process id", req.OwnerPID)}
		}
		o, err := procid.Of(req.OwnerPID)
		if err != nil {
			return nil, &Error{Op: op, Err: ErrInvalid, Reason: "owner process: " + err.Error(),
				Hint: "name a running process", Details: map[string]any{"argument": "owner_pid"}}
		}
		b, _ := json.Marshal(o)
		p.owner = sql.NullString{String: string(b), Valid: true}
	}
	for _, t := range p.targets {
		if t.auto {
			pol, err := readPolicy(ctx, s.repo.db)
			if err != nil {
				return nil, s.repo.fail(op, err)
			}
			p.portRange = pol.PortRange
			break
		}
	}
	resources := make([]string, len(p.targets))
	for i, t := range p.targets {
		resources[i] = t.resource + "\x00" + t.checkout
	}
	sort.Strings(resources)
	p.digest = digestOf(struct {
		Op        string
		Holder    string
		TTL       int64
		Resources []string
		OwnerPID  int
		Token     string `json:",omitempty"`
	}{op, p.holder, int64(ttl), resources, req.OwnerPID, tokenDigest(token)})
	return p, nil
}

func checkHolder(op, holder string) error {
	if !validName(holder) {
		return &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("holder %q is not 1 to %d printable characters", holder, maxName),
			Hint: "name the holder", Details: map[string]any{"argument": "holder"}}
	}
	return nil
}

func checkTTL(op string, ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return DefaultTTL, nil
	case ttl < 0 || ttl > maxTTL:
		return 0, &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("ttl %v is not between 0 and %v", ttl, maxTTL)}
	}
	return ttl, nil
}

// admitOne admits the targets at idx in a single transaction of l: the
// host ledger for host-only sets, the repository ledger for the others.
func (s *Service) admitOne(ctx context.Context, l *ledger, p *prepared, idx []int) (*AcquireResult, error) {
	var res AcquireResult
	if found, _, err := s.precheck(ctx, "acquire", p.requestID, p.digest, &res); err != nil {
		return nil, err
	} else if found {
		res.Replayed = true
		return &res, nil
	}
	var out *AcquireResult
	var denial error
	err := l.tx(ctx, "acquire", func(c *sql.Conn) error {
		if p.requestID != "" {
			rec, err := lookupRequest(ctx, c, p.requestID)
			if err != nil {
				return err
			}
			if rec != nil {
				res = AcquireResult{}
				if err := rec.replayInto("acquire", p.requestID, p.digest, &res); err != nil {
					return err
				}
				res.Replayed = true
				out = &res
				return nil
			}
		}
		e, err := s.evaluate(ctx, l, c, p, idx)
		if err != nil {
			return err
		}
		if e.denied() {
			denial = e.denial()
			return e.recordDenial(ctx)
		}
		if err := e.insertAll(ctx, nil); err != nil {
			return err
		}
		out = e.result(nil)
		if err := e.recordWarnings(ctx); err != nil {
			return err
		}
		if p.requestID != "" {
			if err := recordRequest(ctx, c, e.now, p.requestID, "acquire", p.digest, out, ""); err != nil {
				return err
			}
		}
		return step(fpInTransaction)
	})
	if err != nil {
		return nil, err
	}
	if denial != nil {
		return nil, denial
	}
	return out, nil
}

// admitMixed admits a set with host and repository resources in two
// phases: (a) pending host rows, committed; (b) the repository
// transaction, which records the attempt; (c) the pending rows become
// granted. A denial or failure in (b) deletes the pending rows. A crash
// leaves pending rows that grant nothing and that the next admission
// meeting them settles by the attempt record: granted if (b) committed,
// deleted otherwise.
func (s *Service) admitMixed(ctx context.Context, p *prepared, hostIdx, repoIdx []int) (*AcquireResult, error) {
	hl, err := s.hostLedger(ctx, true)
	if err != nil {
		return nil, err
	}
	var res AcquireResult
	found, rec, err := s.precheck(ctx, "acquire", p.requestID, p.digest, &res)
	if err != nil {
		return nil, err
	}
	if found {
		return s.resume(ctx, hl, rec, &res)
	}
	self, err := procid.Of(os.Getpid())
	if err != nil {
		return nil, &Error{Op: "acquire", Err: err, Reason: "cannot establish this process's identity for a two-phase admission"}
	}
	adm, _ := json.Marshal(self)
	pend := &pendingInfo{attempt: "P-" + randomHex(), admitter: string(adm), repoLedger: s.repo.path}

	// (a) Pending host rows.
	var hostPhase, hostDenied *evaluation
	var denial error
	err = hl.tx(ctx, "acquire", func(c *sql.Conn) error {
		e, err := s.evaluate(ctx, hl, c, p, hostIdx)
		if err != nil {
			return err
		}
		if e.denied() {
			hostDenied = e
			return e.recordDenial(ctx)
		}
		if err := e.insertAll(ctx, pend); err != nil {
			return err
		}
		hostPhase = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hostDenied != nil {
		// Report the repository's conflicts too, so that the refusal is
		// complete (and quarantined when any blocking lease is).
		err := s.repo.tx(ctx, "acquire", func(c *sql.Conn) error {
			e, err := s.evaluate(ctx, s.repo, c, p, repoIdx)
			if err != nil || !e.denied() {
				return err
			}
			hostDenied.conflicts = append(hostDenied.conflicts, e.conflicts...)
			hostDenied.quarantined = hostDenied.quarantined || e.quarantined
			return e.recordDenial(ctx)
		})
		if err != nil {
			return nil, err
		}
		return nil, hostDenied.denial()
	}
	// Clean-up must run even when ctx was cancelled meanwhile.
	cleanCtx := context.WithoutCancel(ctx)
	abandon := func(cause error) error {
		if _, err := s.settleAttempt(cleanCtx, hl, s.repo.path, pend.attempt); err != nil {
			return errors.Join(cause, err)
		}
		return cause
	}
	if err := step(fpHostPending); err != nil {
		return nil, abandon(err)
	}

	// (b) The repository transaction.
	var out *AcquireResult
	var replayed *recorded
	err = s.repo.tx(ctx, "acquire", func(c *sql.Conn) error {
		if p.requestID != "" {
			rec, err := lookupRequest(ctx, c, p.requestID)
			if err != nil {
				return err
			}
			if rec != nil {
				res = AcquireResult{}
				if err := rec.replayInto("acquire", p.requestID, p.digest, &res); err != nil {
					return err
				}
				replayed = rec
				return nil
			}
		}
		e, err := s.evaluate(ctx, s.repo, c, p, repoIdx)
		if err != nil {
			return err
		}
		if e.denied() {
			denial = e.denial()
			return e.recordDenial(ctx)
		}
		if err := e.insertAll(ctx, nil); err != nil {
			return err
		}
		e.merge(hostPhase)
		out = e.result(hostPhase)
		if err := e.recordWarnings(ctx); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO attempts (id, at) VALUES (?, ?)`, pend.attempt, e.now); err != nil {
			return err
		}
		if p.requestID != "" {
			if err := recordRequest(ctx, c, e.now, p.requestID, "acquire", p.digest, out, pend.attempt); err != nil {
				return err
			}
		}
		return step(fpInTransaction)
	})
	switch {
	case err != nil:
		return nil, abandon(err)
	case denial != nil:
		return nil, abandon(denial)
	case replayed != nil:
		// A concurrent call with the same request id won: drop ours,
		// finish its.
		if err := abandon(nil); err != nil {
			return nil, err
		}
		return s.resume(ctx, hl, replayed, &res)
	}

	// (c) Confirm. A failure here leaves the request granted in the
	// repository ledger and its host rows pending: they are confirmed by
	// a retry with the same request id, or by the next admission that
	// meets them once this process has exited.
	if err := step(fpRepoCommitted); err != nil {
		return nil, err
	}
	committed, err := s.settleAttempt(cleanCtx, hl, s.repo.path, pend.attempt)
	if err != nil {
		return nil, &Error{Op: "acquire", Path: hl.path, Err: err,
			Reason: "the repository ledger granted the request but its host leases could not be confirmed",
			Hint:   "the next admission confirms them; a retry with the same request id shows the result", Details: map[string]any{"resumable": true}}
	}
	if !committed {
		return nil, &Error{Op: "acquire", Path: s.repo.path, Err: errors.New("admission: committed attempt " + pend.attempt + " not found"),
			Reason: "the repository ledger lost a committed attempt"}
	}
	return out, nil
}

// resume finishes a replayed two-phase admission whose confirmation may
// have been interrupted, and returns its recorded result.
func (s *Service) resume(ctx context.Context, hl *ledger, rec *recorded, res *AcquireResult) (*AcquireResult, error) {
	res.Replayed = true
	if rec != nil && rec.attempt.Valid {
		if _, err := s.settleAttempt(context.WithoutCancel(ctx), hl, s.repo.path, rec.attempt.String); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// pendingInfo marks the host rows of a two-phase admission.
type pendingInfo struct {
	attempt    string // unique per admission attempt
	admitter   string // procid.Owner of the admitting process, JSON
	repoLedger string // where the attempt commits
}

// settleAttempt ends the pending host rows of attempt: granted when the
// repository ledger recorded the attempt, deleted otherwise. It reports
// whether the attempt committed.
func (s *Service) settleAttempt(ctx context.Context, hl *ledger, repoLedger, attempt string) (committed bool, err error) {
	err = hl.tx(ctx, "acquire", func(c *sql.Conn) error {
		committed, err = s.attemptCommitted(ctx, repoLedger, attempt)
		if err != nil {
			return err
		}
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		return settlePending(ctx, c, now, repoLedger, attempt, committed)
	})
	return committed, err
}

// settlePending grants (committed) or deletes the pending rows of attempt,
// with an event for each.
func settlePending(ctx context.Context, c *sql.Conn, now int64, repoLedger, attempt string, committed bool) error {
	rows, err := c.QueryContext(ctx, `SELECT id, holder FROM leases WHERE pending_request = ? AND repo_ledger = ? AND state = 'pending'`,
		attempt, repoLedger)
	if err != nil {
		return err
	}
	type idHolder struct{ id, holder string }
	var ids []idHolder
	for rows.Next() {
		var x idHolder
		if err := rows.Scan(&x.id, &x.holder); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	kind, stmt := "grant", `UPDATE leases SET state = 'granted' WHERE id = ?`
	if !committed {
		kind, stmt = "abandon", `DELETE FROM leases WHERE id = ?`
	}
	for _, x := range ids {
		if _, err := c.ExecContext(ctx, stmt, x.id); err != nil {
			return err
		}
		if err := appendEvent(ctx, c, now, kind, x.holder, x.id, map[string]string{"attempt": attempt}); err != nil {
			return err
		}
	}
	return nil
}

// attemptCommitted reports whether the repository ledger at path recorded
// attempt. A ledger that does not exist recorded nothing.
func (s *Service) attemptCommitted(ctx context.Context, path, attempt string) (bool, error) {
	db := s.repo.db
	if path != s.repo.path {
		fi, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		l, err := openLedger(ctx, path, kindRepository, s.busy)
		if err != nil {
			return false, err
		}
		defer l.close()
		db = l.db
	}
	var one int
	err := db.QueryRowContext(ctx, `SELECT 1 FROM attempts WHERE id = ?`, attempt).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

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

// settleDeadAdmitter is evaluation.settleDeadAdmitter inside any
// transaction c of the host ledger.
func (s *Service) settleDeadAdmitter(ctx context.Context, c *sql.Conn, now int64, r *row) (gone bool, why string, err error) {
	o, ok, err := ownerOf(r.admitter)
	if err != nil || !ok {
		return false, "its admitting process is not recorded", nil
	}
	live, why := procid.Judge(o)
	if live != procid.Dead {
		return false, why, nil
	}
	committed, cerr := s.attemptCommitted(ctx, r.repoLedger.String, r.pendingRequest.String)
	if cerr != nil {
		return false, "its admitter is dead but the ledger " + r.repoLedger.String + " cannot be read: " + cerr.Error(), nil
	}
	if err := settlePending(ctx, c, now, r.repoLedger.String, r.pendingRequest.String, committed); err != nil {
		return false, "", err
	}
	if !committed {
		return true, "", nil
	}
	r.state = "granted"
	return false, "", nil
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
		if c.Policy != PolicyHostSingleton {
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
	for i := range e.p.targets {
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
