package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/internal/procid"
)

// Failpoints of a shared admission.
var (
	// fpSharedPending fires after the shared ledger wrote the request's
	// pending records and before the local transaction: a crash there
	// leaves pending records that the next admission on this machine
	// deletes once this process is proven dead.
	fpSharedPending = failpoint.New("admission/shared-pending")
	// fpSharedCommitted fires after the local transaction committed and
	// before the shared records are confirmed: a crash there leaves
	// pending records that the next admission on this machine (or a
	// retry with the same request id) confirms.
	fpSharedCommitted = failpoint.New("admission/shared-committed")
)

// sharedTries bounds how often an admission reads the shared ledger
// again when another admission changed it between its read and its write.
const sharedTries = 8

// A sharedPhase is the shared ledger's part of one admission.
type sharedPhase struct {
	attempt  string
	records  map[int]SharedRecord // per target: the record written or reused
	reused   map[int]bool
	warnings []Warning
	decided  []string
	clone    string
	now      time.Time
	// final: the records are written granted, in the one transaction
	// that decides the request (admitClusterOnly), not pending.
	final bool
}

// record returns the shared record of target i (nil-safe).
func (sp *sharedPhase) record(i int) (SharedRecord, bool) {
	if sp == nil {
		return SharedRecord{}, false
	}
	r, ok := sp.records[i]
	return r, ok
}

// clusterLease returns the lease of cluster target i as it is once the
// admission is confirmed (nil-safe).
func (sp *sharedPhase) clusterLease(i int) (Lease, bool) {
	r, ok := sp.record(i)
	if !ok || r.Scope != ScopeCluster {
		return Lease{}, false
	}
	r.Pending, r.Live = false, true
	return r.lease(sp.clone, sp.now), true
}

// admitShared admits a set that holds shared scopes (intents, cluster
// names), in two phases: (a) the shared ledger's transaction writes
// pending records, after checking the conflicts of every clone; (b) the
// local transactions grant the local part (files, intents, host names)
// and record the attempt in the repository ledger; (c) the shared records
// are confirmed. A denial or failure in (b) deletes the pending records. A
// crash leaves pending records that block and grant nothing: the next
// admission on this machine settles them by the attempt record once this
// process is proven dead; another machine cannot prove that, and takes
// them for quarantined once their lease lapses. A request of cluster
// names alone is decided in one transaction (admitClusterOnly).
func (s *Service) admitShared(ctx context.Context, p *prepared) (*AcquireResult, error) {
	var res AcquireResult
	found, rec, err := s.precheck(ctx, "acquire", p.requestID, p.digest, &res)
	if err != nil {
		return nil, err
	}
	if found {
		return s.resumeShared(ctx, p, rec, &res)
	}
	if clusterOnly(p) {
		return s.admitClusterOnly(ctx, p)
	}
	self, err := procid.Of(os.Getpid())
	if err != nil {
		return nil, &Error{Op: "acquire", Err: err, Reason: "cannot establish this process's identity for a two-phase admission"}
	}
	adm, _ := json.Marshal(self)
	nanos, err := s.ledgerNow(ctx, s.repo.db)
	if err != nil {
		return nil, s.repo.fail("acquire", err)
	}
	sp := &sharedPhase{attempt: "P-" + randomHex(), clone: s.shared.Clone(), now: fromNanos(nanos)}
	if err := s.pendShared(ctx, p, sp, string(adm)); err != nil {
		return nil, err
	}
	p.shared = sp
	cleanCtx := context.WithoutCancel(ctx)
	if err := step(fpSharedPending); err != nil {
		return nil, s.abandonShared(cleanCtx, sp.attempt, err)
	}
	out, err := s.admitLocal(ctx, p)
	if err != nil {
		return nil, s.abandonShared(cleanCtx, sp.attempt, err)
	}
	if out.Replayed {
		// A concurrent call with the same request id won: drop ours.
		return out, s.abandonShared(cleanCtx, sp.attempt, nil)
	}
	if err := step(fpSharedCommitted); err != nil {
		return nil, err
	}
	if err := s.shared.Settle(cleanCtx, sp.attempt, true); err != nil {
		return nil, &Error{Op: "acquire", Err: err, Reason: "the request was granted here, but " + s.shared.Describe() +
			" could not confirm its shared leases: " + errorText(err),
			Hint:    "they stay pending (they block, and grant nothing to anyone else) until the next admission here, or a retry with the same request id, confirms them",
			Details: map[string]any{"resumable": true}}
	}
	return out, nil
}

// pendShared is phase (a): read the shared ledger, decide, and write the
// pending records; read again when another admission wrote meanwhile.
func (s *Service) pendShared(ctx context.Context, p *prepared, sp *sharedPhase, admitter string) error {
	var idx []int
	for i, t := range p.targets {
		if sharedScope(t.scope) {
			idx = append(idx, i)
		}
	}
	for try := 1; ; try++ {
		v, err := s.shared.View(ctx)
		if err != nil {
			return err
		}
		se, err := s.evaluateShared(ctx, v, p, idx, sp.now)
		if err != nil {
			return err
		}
		if len(se.conflicts) > 0 {
			return (&evaluation{p: p, conflicts: se.conflicts, quarantined: se.quarantined}).denial()
		}
		sp.records, sp.reused, sp.warnings, sp.decided = map[int]SharedRecord{}, map[int]bool{}, se.warnings, se.decided
		var recs []SharedRecord
		var at []int
		for _, i := range idx {
			if r, ok := se.reused[i]; ok {
				sp.records[i], sp.reused[i] = r, true
				continue
			}
			recs = append(recs, s.newRecord(p, p.targets[i], sp, admitter))
			at = append(at, i)
		}
		if len(recs) == 0 {
			return nil
		}
		written, err := s.shared.Put(ctx, v, recs, p.ttl)
		if errors.Is(err, ErrSharedChanged) && try < sharedTries {
			continue
		}
		if err != nil {
			return err
		}
		for k, i := range at {
			sp.records[i] = written[k]
		}
		return nil
	}
}

// newRecord is the pending shared record of target t.
func (s *Service) newRecord(p *prepared, t target, sp *sharedPhase, admitter string) SharedRecord {
	r := SharedRecord{ID: newLeaseID(), Scope: t.scope, Resource: t.resource, Key: t.key, Subtree: t.subtree,
		Clone: sp.clone, Checkout: t.checkout, Holder: p.holder, AcquiredAt: sp.now, ExpiresAt: sp.now.Add(p.ttl),
		Admitter: admitter, Attempt: sp.attempt, RepoLedger: s.repo.path, Pending: true,
		TokenDigest: tokenDigest(p.token), RequestID: p.requestID}
	if p.owner.Valid {
		r.Owner = p.owner.String
	}
	if sp.final {
		r.Attempt, r.RepoLedger, r.Pending = "", "", false
	}
	return r
}

// abandonShared settles the shared records of an attempt that failed:
// confirmed if the local transaction committed all the same, else
// deleted. cause is returned, with the settling's own failure if any.
func (s *Service) abandonShared(ctx context.Context, attempt string, cause error) error {
	committed, err := s.attemptCommitted(ctx, s.repo.path, attempt)
	if err == nil {
		err = s.shared.Settle(ctx, attempt, committed)
	}
	if err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// resumeShared finishes a replayed shared admission whose confirmation may
// have been interrupted, and returns its recorded result.
func (s *Service) resumeShared(ctx context.Context, p *prepared, rec *recorded, res *AcquireResult) (*AcquireResult, error) {
	if rec != nil && rec.attempt.Valid {
		if err := s.shared.Settle(context.WithoutCancel(ctx), rec.attempt.String, true); err != nil {
			return nil, err
		}
	}
	for _, t := range p.targets {
		if t.scope == ScopeHost {
			hl, err := s.hostLedger(ctx, true)
			if err != nil {
				return nil, err
			}
			return s.resume(ctx, hl, rec, res)
		}
	}
	res.Replayed = true
	return res, nil
}

// errorText is err's reason when it is an *Error, else its text.
func errorText(err error) string {
	var ae *Error
	if errors.As(err, &ae) && ae.Reason != "" {
		return ae.Reason
	}
	return err.Error()
}

// A sharedEval is the shared ledger's verdict on some targets.
type sharedEval struct {
	conflicts   []Conflict
	warnings    []Warning
	decided     []string
	reused      map[int]SharedRecord
	quarantined bool
}

func (se *sharedEval) decide(key string) {
	for _, k := range se.decided {
		if k == key {
			return
		}
	}
	se.decided = append(se.decided, key)
}

// evaluateShared weighs every live shared record against the shared
// targets at idx: another clone's overlapping intent by the shared
// policy's cross_worktree_overlap, any other holder of a cluster name
// always (cluster_singleton). This clone's intents are left to the
// repository ledger, which keeps them too. On the way it settles the
// records this machine can prove abandoned.
func (s *Service) evaluateShared(ctx context.Context, v *SharedView, p *prepared, idx []int, now time.Time) (*sharedEval, error) {
	pol := DefaultPolicy()
	if v.Policy != nil {
		pol = *v.Policy
	}
	clone := s.shared.Clone()
	se := &sharedEval{decided: []string{}, reused: map[int]SharedRecord{}}
	for j := range v.Records {
		r := &v.Records[j]
		gone, err := s.settleShared(ctx, r, now)
		if err != nil {
			return nil, err
		}
		if gone {
			continue
		}
		for _, i := range idx {
			s.weighShared(se, pol, clone, i, p, r, now)
		}
	}
	return se, nil
}

// weighShared weighs record r against target i.
func (s *Service) weighShared(se *sharedEval, pol PolicySet, clone string, i int, p *prepared, r *SharedRecord, now time.Time) {
	t := p.targets[i]
	if t.scope != r.Scope {
		return
	}
	key, reason := "", ""
	switch t.scope {
	case ScopeCluster:
		if t.key != r.Key {
			return
		}
		key, reason = PolicyClusterSingleton, "cluster name "+t.key+" has one holder across every host"
	case ScopeIntent:
		if r.Clone == clone || !overlaps(t.key, t.subtree, r.Key, r.Subtree) {
			return // this clone's own intents are the repository ledger's to weigh
		}
		key, reason = PolicyCrossWorktreeOverlap, fmt.Sprintf("%s overlaps %s in another clone (%s)", t.resource, r.Resource, r.Clone)
	}
	st := r.stateAt(clone, now)
	if r.Clone == clone && r.Holder == p.holder && st == StateActive {
		if _, ok := se.reused[i]; !ok && r.Key == t.key && r.Subtree == t.subtree && r.Checkout == t.checkout {
			se.reused[i] = *r
		}
		return
	}
	other := r.lease(clone, now)
	se.decide(key)
	switch {
	case st == StatePending:
		se.conflicts = append(se.conflicts, Conflict{Resource: t.resource, Lease: other, Policy: key,
			Reason: reason + "; its admission on " + r.Clone + " has not finished"})
		return
	case st == StateQuarantined:
		reason += fmt.Sprintf("; lease %s of %s lapsed without release (quarantined)", r.ID, r.Holder)
	}
	switch pol.Value(key) {
	case Allow:
	case Warn:
		se.warnings = append(se.warnings, Warning{Code: warningCode(key), Policy: key, Resource: t.resource, Lease: &other,
			Message: fmt.Sprintf("%s (lease %s of %s); policy %s=warn", reason, r.ID, r.Holder, key)})
	case Block:
		se.conflicts = append(se.conflicts, Conflict{Resource: t.resource, Lease: other, Policy: key, Reason: reason})
		se.quarantined = se.quarantined || st == StateQuarantined
	}
}

// settleShared settles what this machine can prove about record r: a
// pending record whose admitter is proven dead is confirmed or deleted by
// its attempt record (gone when deleted); a quarantined one whose owner
// process is proven dead is deleted (resolved). Another machine's
// processes are never judged: that machine settles them.
func (s *Service) settleShared(ctx context.Context, r *SharedRecord, now time.Time) (gone bool, err error) {
	if r.Pending {
		o, ok, err := ownerOf(nullString(r.Admitter))
		if err != nil || !ok {
			return false, nil
		}
		if live, _ := procid.Judge(o); live != procid.Dead {
			return false, nil
		}
		committed, err := s.attemptCommitted(ctx, r.RepoLedger, r.Attempt)
		if err != nil {
			return false, nil // its ledger cannot be read: it stays pending
		}
		if err := s.shared.Settle(ctx, r.Attempt, committed); err != nil {
			return false, err
		}
		r.Pending = false
		return !committed, nil
	}
	if r.stateAt(s.shared.Clone(), now) != StateQuarantined {
		return false, nil
	}
	o, ok, err := ownerOf(nullString(r.Owner))
	if err != nil || !ok {
		return false, nil
	}
	if live, _ := procid.Judge(o); live != procid.Dead {
		return false, nil
	}
	return true, s.shared.Delete(ctx, []string{r.ID})
}
