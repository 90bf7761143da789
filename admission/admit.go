package admission

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
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

// AcquireResult is wire.AcquireResult: the result type is defined once, in the wire contract.
type AcquireResult = wire.AcquireResult

// Warning is wire.Warning: the result type is defined once, in the wire contract.
type Warning = wire.Warning

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
	// shared is the shared ledger's part of the admission, when the set
	// holds shared scopes and a shared ledger is configured: the local
	// transactions record its attempt and report its leases.
	shared *sharedPhase
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
	needShared := false
	for _, t := range p.targets {
		if t.scope == ScopeCluster && s.shared == nil {
			return nil, &Error{Op: "acquire", Resource: t.resource, Err: ErrInvalid,
				Reason: t.resource + " is shared by every host of a coordination cluster, and none is configured",
				Hint:   "configure the coordination cluster (etcd endpoints) of this repository, or use host:NAME for a singleton of this machine"}
		}
		needShared = needShared || (s.shared != nil && sharedScope(t.scope))
	}
	if needShared {
		return s.admitShared(ctx, p)
	}
	return s.admitLocal(ctx, p)
}

// admitLocal admits the targets that live on this machine: host names in
// the host ledger, files and intents in the repository ledger.
func (s *Service) admitLocal(ctx context.Context, p *prepared) (*AcquireResult, error) {
	var hostIdx, repoIdx []int
	for i, t := range p.targets {
		switch t.scope {
		case ScopeHost:
			hostIdx = append(hostIdx, i)
		case ScopeCluster:
		default:
			repoIdx = append(repoIdx, i)
		}
	}
	switch {
	case len(repoIdx) == 0 && p.shared == nil:
		hl, err := s.hostLedger(ctx, true)
		if err != nil {
			return nil, err
		}
		return s.admitOne(ctx, hl, p, hostIdx)
	case len(hostIdx) == 0:
		// A shared admission records its attempt here even when it
		// grants nothing in this ledger.
		return s.admitOne(ctx, s.repo, p, repoIdx)
	}
	return s.admitMixed(ctx, p, hostIdx, repoIdx)
}

func (s *Service) prepareAcquire(ctx context.Context, req AcquireRequest) (*prepared, error) {
	const op = "acquire"
	p, err := prepareArguments(op, req)
	if err != nil {
		return nil, err
	}
	if p.targets, err = s.targets(ctx, op, req); err != nil {
		return nil, err
	}
	if req.OwnerPID != 0 {
		if p.owner, err = ownerIdentity(op, req.OwnerPID); err != nil {
			return nil, err
		}
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
	}{op, p.holder, int64(p.ttl), resources, req.OwnerPID, tokenDigest(p.token)})
	return p, nil
}

// prepareArguments checks the holder, TTL, request id and token of req,
// generating a token when none is given.
func prepareArguments(op string, req AcquireRequest) (*prepared, error) {
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
	return &prepared{holder: req.Holder, ttl: ttl, requestID: req.RequestID, token: token, generated: generated}, nil
}

// targets parses req's resources and makes their paths canonical, in
// request order, each distinct resource once (each host:port:auto apart).
func (s *Service) targets(ctx context.Context, op string, req AcquireRequest) ([]target, error) {
	parsed := make([]Resource, len(req.Resources))
	needCheckout := false
	for i, raw := range req.Resources {
		r, err := ParseResource(raw)
		if err != nil {
			err.(*Error).Op = op
			return nil, err
		}
		parsed[i] = r
		needCheckout = needCheckout || (r.Scope != ScopeHost && r.Scope != ScopeCluster)
	}
	var co Checkout
	if needCheckout {
		var err error
		if co, err = s.checkout(ctx, op, req.Checkout, req.Cwd); err != nil {
			return nil, err
		}
	}
	batch := pathid.NewResolver() // one request's paths, resolved together
	var out []target
	seen := map[string]bool{}
	for n, r := range parsed {
		t, err := co.target(batch, req.Cwd, r)
		if err != nil {
			var ae *Error
			if errors.As(err, &ae) && ae.Resource == "" {
				ae.Resource = r.String()
			}
			return nil, err
		}
		id := t.resource + "\x00" + t.checkout
		if t.auto {
			id += strconv.Itoa(n) // each asks for a port of its own
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// target makes r canonical in checkout co (unused for host names).
func (co Checkout) target(batch *pathid.Resolver, cwd string, r Resource) (target, error) {
	t := target{scope: r.Scope}
	var err error
	switch r.Scope {
	case ScopeHost, ScopeCluster:
		t.key = r.Raw
		t.auto = r.Scope == ScopeHost && r.Raw == AutoPort
	case ScopeFile:
		t.checkout = co.Root
		t.key, err = co.key(batch, cwd, r.Raw, true)
	case ScopeIntent:
		t.checkout = co.Root
		var lit string
		lit, t.subtree = r.intentParts()
		if r.Raw != "**" {
			t.key, err = co.key(batch, cwd, lit, false)
		}
	}
	t.resource = canonicalResource(t.scope, t.key, t.subtree)
	return t, err
}

// ownerIdentity records the identity of the running process pid.
func ownerIdentity(op string, pid int) (sql.NullString, error) {
	if pid < 0 {
		return sql.NullString{}, &Error{Op: op, Err: ErrInvalid, Reason: fmt.Sprintf("owner pid %d is not a process id", pid)}
	}
	o, err := procid.Of(pid)
	if err != nil {
		return sql.NullString{}, &Error{Op: op, Err: ErrInvalid, Reason: "owner process: " + err.Error(),
			Hint: "name a running process", Details: map[string]any{"argument": "owner_pid"}}
	}
	b, _ := json.Marshal(o)
	return sql.NullString{String: string(b), Valid: true}, nil
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
		attempt := ""
		if p.shared != nil && l == s.repo {
			attempt = p.shared.attempt
			if _, err := c.ExecContext(ctx, `INSERT INTO attempts (id, at) VALUES (?, ?)`, attempt, e.now); err != nil {
				return err
			}
		}
		if p.requestID != "" {
			if err := recordRequest(ctx, c, e.now, p.requestID, "acquire", p.digest, out, attempt); err != nil {
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
