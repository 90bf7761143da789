package admission

import "context"

// A Backend keeps leases and admits them: the ledger operations admission
// needs, each all-or-nothing. Service, on the SQLite ledgers (a
// repository ledger and the host ledger), is the one implementation
// today; a backend shared across machines (etcd) is to implement the same
// contract, which the conformance suite in package admissiontest checks.
//
// The contract, for every implementation:
//
//   - Acquire looks up every conflicting lease (file, intent and host
//     scopes, across checkouts, by the rules of docs/leases.md) and grants
//     every requested resource or none, recording the grant's events, and
//     the result under the request id: a retry with the same id and
//     arguments returns the recorded result and grants nothing new.
//     Generations only grow, and are never reused.
//   - Renew and Release act on the exact holder's leases (token or owner
//     process), all named leases or none; Release is idempotent.
//   - An expired, unreleased lease is quarantined: it keeps blocking until
//     its holder releases it, Resolve lifts it (the writer has stopped), or
//     its recorded owner process is proven dead.
//   - Policy and SetPolicy read and change the repository's policy, which
//     decides conflicts (warn or block) and enforcement gaps.
//   - Check records each changed path outside the holder's leases as an
//     enforcement_gap event and lets the policy decide; it never grants.
//   - LiveLeases answers, under the backend's write lock, which leases keep
//     a holder or a checkout in use (a reclaim refuses while any is live).
//
// Refusals are *Error values wrapping this package's sentinels; a refused
// call changes nothing (except settling what it proved: a lease whose
// owner is proven dead is resolved).
type Backend interface {
	Acquire(ctx context.Context, req AcquireRequest) (*AcquireResult, error)
	Renew(ctx context.Context, req RenewRequest) (*RenewResult, error)
	Release(ctx context.Context, req ReleaseRequest) (*ReleaseResult, error)
	Resolve(ctx context.Context, req ResolveRequest) (*Lease, error)
	List(ctx context.Context, req ListRequest) ([]Lease, error)
	LiveLeases(ctx context.Context, holder, checkoutRoot string) ([]Lease, error)
	Policy(ctx context.Context) (PolicySet, error)
	SetPolicy(ctx context.Context, key, value string) (PolicySet, error)
	Check(ctx context.Context, req CheckRequest) (*CheckResult, error)
	Close() error
}

var _ Backend = (*Service)(nil)
