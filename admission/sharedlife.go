package admission

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// The operations below act on the repository ledger and the host ledger
// as documented on their local forms (releaseLocal, renewLocal, ...);
// with a shared ledger they also act on the shared records: a shared
// intent is released, renewed or resolved there too, and cluster leases,
// which only the shared ledger keeps, are acted on there alone. Each reads
// the shared ledger first, so that an unreachable one refuses before any
// change.

// Release ends leases of req.Holder (see releaseLocal): with a shared
// ledger, its shared intents and cluster leases too.
func (s *Service) Release(ctx context.Context, req ReleaseRequest) (*ReleaseResult, error) {
	if s.shared == nil {
		return s.releaseLocal(ctx, req)
	}
	const op = "release"
	now, cluster, local, err := s.splitShared(ctx, op, req.Holder, req.IDs)
	if err != nil {
		return nil, err
	}
	auth := authority{token: req.Token, force: req.Force, servesOthers: s.servesOthers}
	for _, r := range cluster {
		if _, err := auth.authorize(op, r.row()); err != nil {
			return nil, err
		}
	}
	res := &ReleaseResult{Leases: []Lease{}, RequestID: req.RequestID}
	if len(req.IDs) == 0 || len(local) > 0 {
		lreq := req
		lreq.IDs = local
		if res, err = s.releaseLocal(ctx, lreq); err != nil {
			return nil, err
		}
	}
	var ids []string
	for _, l := range res.Leases {
		if l.Scope == ScopeIntent && l.State == StateReleased {
			ids = append(ids, l.ID)
		}
	}
	for _, r := range cluster {
		ids = append(ids, r.ID)
		l := r.lease(s.shared.Clone(), now)
		l.State, l.ReleasedAt = StateReleased, &now
		res.Leases = append(res.Leases, l)
	}
	if err := s.shared.Delete(ctx, ids); err != nil {
		return nil, err
	}
	return res, nil
}

// Renew extends leases of req.Holder (see renewLocal): with a shared
// ledger, the lease its shared intents' and cluster leases' permission
// rides too.
func (s *Service) Renew(ctx context.Context, req RenewRequest) (*RenewResult, error) {
	if s.shared == nil {
		return s.renewLocal(ctx, req)
	}
	const op = "renew"
	ttl, err := checkTTL(op, req.TTL)
	if err != nil {
		return nil, err
	}
	now, cluster, local, err := s.splitShared(ctx, op, req.Holder, req.IDs)
	if err != nil {
		return nil, err
	}
	auth := authority{token: req.Token, force: req.Force, servesOthers: s.servesOthers}
	clone := s.shared.Clone()
	for _, r := range cluster {
		if r.stateAt(clone, now) != StateActive {
			return nil, &Error{Op: op, Resource: r.Resource, Err: ErrQuarantined,
				Reason: fmt.Sprintf("lease %s lapsed without release; expiry does not prove its writer stopped, so it cannot be renewed", r.ID),
				Hint:   "release it and acquire again", Details: map[string]any{"holder": r.Holder, "lease": r.ID}}
		}
		if _, err := auth.authorize(op, r.row()); err != nil {
			return nil, err
		}
	}
	res := &RenewResult{Leases: []Lease{}, Warnings: []Warning{}, RequestID: req.RequestID}
	if len(local) > 0 || len(req.IDs) == 0 {
		lreq := req
		lreq.IDs = local
		res, err = s.renewLocal(ctx, lreq)
		if err != nil && !(len(req.IDs) == 0 && len(cluster) > 0) {
			return nil, err
		}
		if err != nil {
			res = &RenewResult{Leases: []Lease{}, Warnings: []Warning{}, RequestID: req.RequestID}
		}
	}
	var ids []string
	for _, l := range res.Leases {
		if l.Scope == ScopeIntent {
			ids = append(ids, l.ID)
		}
	}
	for _, r := range cluster {
		ids = append(ids, r.ID)
		r.ExpiresAt = now.Add(ttl)
		res.Leases = append(res.Leases, r.lease(clone, now))
	}
	if len(ids) > 0 {
		if err := s.shared.Renew(ctx, ids, ttl, now.Add(ttl)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Resolve lifts the quarantine of lease req.ID (see resolveLocal): with a
// shared ledger, a shared intent's record too, and a lease only the
// shared ledger keeps (a cluster lease, another clone's intent) there.
func (s *Service) Resolve(ctx context.Context, req ResolveRequest) (*Lease, error) {
	if s.shared == nil {
		return s.resolveLocal(ctx, req)
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		return nil, err
	}
	var rec *SharedRecord
	for i := range v.Records {
		if v.Records[i].ID == req.ID {
			rec = &v.Records[i]
		}
	}
	l, err := s.resolveLocal(ctx, req)
	if err == nil || rec == nil || !slices.Contains([]error{ErrNotFound}, errSentinel(err)) {
		if err == nil && rec != nil {
			err = s.shared.Delete(ctx, []string{rec.ID})
		}
		return l, err
	}
	if !req.WriterStopped {
		return nil, err
	}
	now := s.now()
	if st := rec.stateAt(s.shared.Clone(), now); st != StateQuarantined {
		return nil, &Error{Op: "resolve", Resource: rec.Resource, Err: ErrNotQuarantined,
			Reason: fmt.Sprintf("lease %s is %s; only a lapsed lease needs resolving", rec.ID, st)}
	}
	if err := s.shared.Delete(ctx, []string{rec.ID}); err != nil {
		return nil, err
	}
	out := rec.lease(s.shared.Clone(), now)
	out.State, out.ResolvedAt, out.ResolvedHow = StateResolved, &now, "writer_stopped"
	return &out, nil
}

// errSentinel returns the sentinel an *Error wraps, or err.
func errSentinel(err error) error {
	if ae, ok := err.(*Error); ok {
		return ae.Err
	}
	return err
}

// List returns the leases (see listLocal): with a shared ledger, this
// clone's cluster leases too.
func (s *Service) List(ctx context.Context, req ListRequest) ([]Lease, error) {
	out, err := s.listLocal(ctx, req)
	if err != nil || s.shared == nil {
		return out, err
	}
	cl, err := s.clusterLeases(ctx, req.Holder)
	if err != nil {
		return nil, err
	}
	return append(out, cl...), nil
}

// LiveLeases returns the leases that keep a task or checkout in use (see
// liveLocal): with a shared ledger, the holder's cluster leases too. When
// the shared ledger cannot be read, it refuses: the task may hold shared
// leases, and a reclaim must not take it for lease-free.
func (s *Service) LiveLeases(ctx context.Context, holder, checkoutRoot string) ([]Lease, error) {
	out, err := s.liveLocal(ctx, holder, checkoutRoot)
	if err != nil || s.shared == nil || holder == "" {
		return out, err
	}
	cl, err := s.clusterLeases(ctx, holder)
	if err != nil {
		return nil, err
	}
	return append(out, cl...), nil
}

// clusterLeases lists this clone's cluster leases (of holder, when set).
func (s *Service) clusterLeases(ctx context.Context, holder string) ([]Lease, error) {
	v, err := s.shared.View(ctx)
	if err != nil {
		return nil, err
	}
	clone, now := s.shared.Clone(), s.now()
	out := []Lease{}
	for i := range v.Records {
		r := &v.Records[i]
		if r.Scope == ScopeCluster && r.Clone == clone && (holder == "" || r.Holder == holder) {
			out = append(out, r.lease(clone, now))
		}
	}
	return out, nil
}

// splitShared reads the shared ledger and splits ids into this clone's
// cluster records of holder (all of them when ids is empty) and the ids
// the local ledgers keep.
func (s *Service) splitShared(ctx context.Context, op, holder string, ids []string) (now time.Time, cluster []SharedRecord, local []string, err error) {
	if err := checkHolder(op, holder); err != nil {
		return now, nil, nil, err
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		return now, nil, nil, err
	}
	clone := s.shared.Clone()
	byID := map[string]SharedRecord{}
	for _, r := range v.Records {
		if r.Scope == ScopeCluster && r.Clone == clone {
			byID[r.ID] = r
			if len(ids) == 0 && r.Holder == holder {
				cluster = append(cluster, r)
			}
		}
	}
	for _, id := range ids {
		r, ok := byID[id]
		switch {
		case !ok:
			local = append(local, id)
		case r.Holder != holder:
			return now, nil, nil, &Error{Op: op, Resource: r.Resource, Err: ErrNotHolder,
				Reason: fmt.Sprintf("lease %s belongs to %s, not %s", r.ID, r.Holder, holder)}
		default:
			cluster = append(cluster, r)
		}
	}
	return s.now(), cluster, local, nil
}

// row is the record as a lease row, for the token and owner checks.
func (r SharedRecord) row() row {
	return row{id: r.ID, scope: string(r.Scope), resource: r.Resource, key: r.Key, holder: r.Holder,
		owner: nullString(r.Owner), tokenDigest: nullString(r.TokenDigest)}
}

// Policy returns the repository's policy: with a shared ledger, the
// conflict keys as the shared ledger keeps them (every clone decides
// alike), the rest from the repository ledger. When the shared ledger
// cannot be read, the repository ledger's values are returned: they are
// shown, never used to decide a shared conflict (PolicyReport says so).
func (s *Service) Policy(ctx context.Context) (PolicySet, error) {
	p, err := s.policyLocal(ctx)
	if err != nil || s.shared == nil {
		return p, err
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		return p, nil
	}
	return overlayShared(p, v.Policy), nil
}

// overlayShared takes the conflict keys of shared, when set, over p.
func overlayShared(p PolicySet, shared *PolicySet) PolicySet {
	if shared != nil {
		p.SameCheckoutConflict, p.CrossWorktreeOverlap, p.EnforcementGap =
			shared.SameCheckoutConflict, shared.CrossWorktreeOverlap, shared.EnforcementGap
	}
	return p
}

// SetPolicy sets key to value (see setPolicyLocal): with a shared ledger,
// a conflict key is set there first, then in the repository ledger.
func (s *Service) SetPolicy(ctx context.Context, key, value string) (PolicySet, error) {
	if s.shared == nil || !slices.Contains(ConflictPolicyKeys(), key) {
		return s.setPolicyLocal(ctx, key, value)
	}
	var check PolicySet
	if why := check.set(key, value); why != "" {
		return s.setPolicyLocal(ctx, key, value) // refuses, with its message
	}
	local, err := s.policyLocal(ctx)
	if err != nil {
		return PolicySet{}, err
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		return PolicySet{}, err
	}
	next := overlayShared(local, v.Policy)
	next.set(key, value)
	if err := s.shared.SetPolicy(ctx, next); err != nil {
		return PolicySet{}, err
	}
	if _, err := s.setPolicyLocal(ctx, key, value); err != nil {
		return PolicySet{}, err
	}
	return next, nil
}

// Heartbeat renews, once, the lease that the permission of this clone's
// active shared leases rides, and this host's registration with the
// shared ledger: the server calls it on its heartbeat, since a command
// exits at once and cannot keep a lease alive. Leases that are no longer
// active here (expired, released) are left to lapse. Without a shared
// ledger it does nothing.
func (s *Service) Heartbeat(ctx context.Context) error {
	if s.shared == nil {
		return nil
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		return err
	}
	local, err := s.listLocal(ctx, ListRequest{})
	if err != nil {
		return err
	}
	active := map[string]bool{}
	for _, l := range local {
		active[l.ID] = l.State == StateActive
	}
	clone, now := s.shared.Clone(), s.now()
	var ids []string
	for i := range v.Records {
		r := &v.Records[i]
		if r.Clone != clone || r.stateAt(clone, now) != StateActive {
			continue
		}
		if r.Scope == ScopeCluster || active[r.ID] {
			ids = append(ids, r.ID)
		}
	}
	return s.shared.KeepAlive(ctx, ids)
}

// A PolicyReport is the policy with where each key's value comes from and,
// with a shared ledger, the clones that share the repository key.
type PolicyReport struct {
	Policy PolicySet `json:"policy"`
	// Sources names, per key, where its value comes from: "default",
	// "repository" (this clone's ledger) or "shared" (the coordination
	// cluster, for every clone alike).
	Sources map[string]string `json:"sources"`
	// Shared names the coordination cluster and the repository key (and
	// why it cannot be read, when it cannot); "" without one.
	Shared string        `json:"shared,omitempty"`
	Clones []SharedClone `json:"clones"`
}

// PolicyReport returns the policy (see Policy) and where each value comes
// from.
func (s *Service) PolicyReport(ctx context.Context) (*PolicyReport, error) {
	p, err := s.policyLocal(ctx)
	if err != nil {
		return nil, err
	}
	set, err := s.setPolicyKeys(ctx)
	if err != nil {
		return nil, err
	}
	r := &PolicyReport{Policy: p, Sources: map[string]string{}, Clones: []SharedClone{}}
	for _, k := range PolicyKeys() {
		r.Sources[k] = "default"
		if set[k] {
			r.Sources[k] = "repository"
		}
	}
	if s.shared == nil {
		return r, nil
	}
	v, err := s.shared.View(ctx)
	if err != nil {
		// Shown as it is: the values are this clone's, the cluster's
		// cannot be read.
		r.Shared = s.shared.Describe() + ", which cannot be read now: " + errorText(err)
		return r, nil
	}
	r.Policy, r.Shared = overlayShared(p, v.Policy), s.shared.Describe()
	if v.Policy != nil {
		for _, k := range ConflictPolicyKeys() {
			r.Sources[k] = "shared"
		}
	}
	if r.Clones, err = s.shared.Clones(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
