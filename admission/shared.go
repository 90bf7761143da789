package admission

import (
	"context"
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// A SharedLedger keeps the leases that several clones of one repository
// share, on several machines: repository intents (each clone keeps its
// own in its repository ledger too, where they meet its file leases) and
// cluster singletons (cluster:NAME), which only the shared ledger keeps.
// Package coordination implements it on etcd; Options.Shared hands one to
// a Service.
//
// Every method is bounded in time: an unreachable ledger refuses with
// ErrCoordinationUnavailable, and a refused call changes nothing that it
// cannot say.
type SharedLedger interface {
	// Describe names the ledger for messages: where it is and the
	// repository key.
	Describe() string
	// Clone is this clone's identity among those that share the key.
	Clone() string
	// View reads every live record (the key's intents, the cluster's
	// singletons) and the shared policy, at one revision.
	View(ctx context.Context) (*SharedView, error)
	// Put writes recs in one transaction that commits only when nothing
	// the view read has changed since (else ErrSharedChanged: read
	// again). Their permission rides one new lease of ttl (rounded up to
	// what the ledger can keep). It returns the records as written, with
	// their generation.
	Put(ctx context.Context, v *SharedView, recs []SharedRecord, ttl time.Duration) ([]SharedRecord, error)
	// Settle ends the pending records of an admission attempt: granted
	// (committed) or deleted.
	Settle(ctx context.Context, attempt string, committed bool) error
	// Delete removes records: released, resolved, abandoned. Absent ones
	// are no error.
	Delete(ctx context.Context, ids []string) error
	// Renew gives the records' permission a new lease of ttl and records
	// the new expiry. A record whose permission has lapsed is not renewed
	// (ErrQuarantined), nor is any other of the call.
	Renew(ctx context.Context, ids []string, ttl time.Duration, expires time.Time) error
	// KeepAlive renews once the leases the records' permission rides, and
	// this host's registration: the server's heartbeat.
	KeepAlive(ctx context.Context, ids []string) error
	// SetPolicy stores the policy that decides shared conflicts.
	SetPolicy(ctx context.Context, p PolicySet) error
	// Clones lists the live clones that share the repository key.
	Clones(ctx context.Context) ([]SharedClone, error)
	Close() error
}

// ErrSharedChanged: a shared ledger's transaction found that what it had
// read changed meanwhile; read again and decide again.
var ErrSharedChanged = wire.Sentinel("coordination_unavailable", "admission: the shared ledger changed since it was read")

// A SharedView is what SharedLedger.View read.
type SharedView struct {
	Records []SharedRecord
	// Policy is the shared policy; nil when none was ever set (the
	// defaults apply).
	Policy *PolicySet
	// Revision is the ledger's revision of the read: a later Put commits
	// only if nothing read changed after it.
	Revision int64
}

// A SharedRecord is one lease as the shared ledger keeps it.
type SharedRecord struct {
	ID       string `json:"id"`
	Scope    Scope  `json:"scope"`
	Resource string `json:"resource"`
	Key      string `json:"key"`
	Subtree  bool   `json:"subtree"`
	// Clone is the clone that holds it; with Holder, the holder: T-14 in
	// two clones is two holders.
	Clone      string    `json:"clone"`
	Checkout   string    `json:"checkout,omitempty"`
	Holder     string    `json:"holder"`
	AcquiredAt time.Time `json:"acquired_at"`
	// ExpiresAt is the holder's clock's expiry, shown to people and judged
	// only on the host that wrote it; other hosts judge by the lease
	// (Live).
	ExpiresAt time.Time `json:"expires_at"`
	Owner     string    `json:"owner,omitempty"`    // procid.Owner of OwnerPID, JSON
	Admitter  string    `json:"admitter,omitempty"` // procid.Owner of the admitting process, JSON
	// Attempt and RepoLedger name the admission attempt of a pending
	// record and the repository ledger where it commits.
	Attempt     string `json:"attempt,omitempty"`
	RepoLedger  string `json:"repo_ledger,omitempty"`
	Pending     bool   `json:"pending"`
	TokenDigest string `json:"token_digest,omitempty"`
	RequestID   string `json:"request_id,omitempty"`

	// Generation is the revision of the transaction that first wrote the
	// record: it grows with every grant and is never reused.
	Generation int64 `json:"-"`
	// Live: the lease its permission rides still runs.
	Live bool `json:"-"`
}

// A SharedClone is a clone registered with the shared ledger by a live
// host.
type SharedClone struct {
	Clone    string `json:"clone"`
	Host     string `json:"host"`
	StateDir string `json:"state_dir"`
}

// PolicyClusterSingleton is the fixed rule that a cluster name has one
// holder across every host of the coordination cluster: always block
// (wire's).
const PolicyClusterSingleton = wire.PolicyClusterSingleton

// sharedScope reports whether the scope is kept by the shared ledger.
func sharedScope(sc Scope) bool { return sc == ScopeIntent || sc == ScopeCluster }

// stateAt is the record's state for this clone at now: this clone judges
// its own records by its clock too, other clones' by their lease alone.
func (r *SharedRecord) stateAt(clone string, now time.Time) State {
	switch {
	case r.Pending && r.Live:
		return StatePending
	case !r.Live:
		return StateQuarantined
	case r.Clone == clone && !now.Before(r.ExpiresAt):
		return StateQuarantined
	}
	return StateActive
}

// lease renders the record as a Lease.
func (r *SharedRecord) lease(clone string, now time.Time) Lease {
	l := Lease{ID: r.ID, Scope: r.Scope, Resource: r.Resource, Holder: r.Holder, Generation: r.Generation,
		AcquiredAt: r.AcquiredAt, ExpiresAt: r.ExpiresAt, State: r.stateAt(clone, now), Checkout: r.Checkout, Key: r.Key}
	if o, ok, err := ownerOf(nullString(r.Owner)); err == nil && ok {
		l.OwnerPID = o.PID
	}
	if r.Clone != clone {
		l.Clone = r.Clone
	}
	return l
}

// A SharedConfig says where a clone's shared ledger is: what its caller
// (the provider) found in the policy and the environment, for whoever
// opens the ledger (package coordination).
type SharedConfig struct {
	Endpoints     []string
	CA, Cert, Key string // PEM files; empty when not set
	RepositoryKey string
	Clone         string // the repository's registration id
	StateDir      string
	// KnownCluster is the cluster id the clone used before ("" at first).
	KnownCluster string
	// RecordCluster records the cluster's id the first time it is reached.
	RecordCluster func(id string) error
}

// Share makes l the service's shared ledger (Options.Shared), for a
// caller that had to read the policy to find it. Call it before any
// other method; the Service closes l.
func (s *Service) Share(l SharedLedger) { s.shared = l }

// A refusingLedger stands for a shared ledger that cannot be opened: every
// shared lease is refused with its error, and local ones are granted.
type refusingLedger struct{ err error }

// RefusingLedger returns a shared ledger that refuses everything with err:
// a clone that names a coordination cluster but no repository key.
func RefusingLedger(err error) SharedLedger { return refusingLedger{err} }

func (r refusingLedger) Describe() string                           { return "no coordination cluster" }
func (r refusingLedger) Clone() string                              { return "" }
func (r refusingLedger) View(context.Context) (*SharedView, error)  { return nil, r.err }
func (r refusingLedger) Settle(context.Context, string, bool) error { return r.err }
func (r refusingLedger) Delete(context.Context, []string) error     { return r.err }
func (r refusingLedger) KeepAlive(context.Context, []string) error  { return r.err }
func (r refusingLedger) SetPolicy(context.Context, PolicySet) error { return r.err }
func (r refusingLedger) Close() error                               { return nil }
func (r refusingLedger) Renew(context.Context, []string, time.Duration, time.Time) error {
	return r.err
}
func (r refusingLedger) Put(context.Context, *SharedView, []SharedRecord, time.Duration) ([]SharedRecord, error) {
	return nil, r.err
}
func (r refusingLedger) Clones(context.Context) ([]SharedClone, error) { return nil, r.err }
