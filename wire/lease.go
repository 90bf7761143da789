package wire

import "time"

// A State is a lease's state, computed from its record and the current time.
type State string

// Lease states.
const (
	// StateActive: granted and not expired. It blocks conflicting grants
	// and may be renewed by its holder.
	StateActive State = "active"
	// StateQuarantined: expired without release. Expiry does not prove the
	// writer stopped, so the lease keeps blocking (its holder included) and
	// cannot be renewed until it is released, resolved with
	// writer_stopped, or its recorded owner process is proven dead.
	StateQuarantined State = "quarantined"
	// StateReleased: the holder released it.
	StateReleased State = "released"
	// StateResolved: a quarantine was lifted by attestation
	// (writer_stopped) or by proof that the owner died (owner_dead).
	StateResolved State = "resolved"
	// StatePending: a host singleton whose two-phase admission has not
	// finished. It blocks other acquirers but grants nothing.
	StatePending State = "pending"
)

// A Scope is the kind of resource a lease covers.
type Scope string

// Scopes.
const (
	// ScopeFile is an exact file inside one checkout (the main worktree or
	// a linked one).
	ScopeFile Scope = "file"
	// ScopeIntent is a repository intent: a literal path, or a literal
	// path followed by "/**" (the subtree below it), advertised to every
	// worktree of the repository.
	ScopeIntent Scope = "intent"
	// ScopeHost is a machine-wide singleton name, such as "port:3000",
	// unique across every repository and workspace on the machine.
	ScopeHost Scope = "host"
	// ScopeCluster is a singleton name shared by every host that uses the
	// same coordination cluster, such as "deploy:staging": one holder
	// across all of them. It needs a shared ledger.
	ScopeCluster Scope = "cluster"
)

// Policy keys: each conflict and warning names the key that decided it.
const (
	// PolicySameCheckoutConflict decides a conflict between holders inside
	// one checkout: the same file, a file and an intent covering it, or two
	// overlapping intents. Default block.
	PolicySameCheckoutConflict = "same_checkout_conflict"
	// PolicyCrossWorktreeOverlap decides an intent overlapping a file or an
	// intent of another holder in another worktree of the repository.
	// Default warn.
	PolicyCrossWorktreeOverlap = "cross_worktree_overlap"
	// PolicyEnforcementGap decides what a check does with a changed path
	// outside the holder's leases. Default warn.
	PolicyEnforcementGap = "enforcement_gap"
	// PolicyPortRange is the range "LO-HI" from which host:port:auto
	// picks free ports.
	PolicyPortRange = "port_range"
	// PolicyHostSingleton is the fixed rule that a host name has one
	// holder on the machine. It is not a setting: always block.
	PolicyHostSingleton = "host_singleton"
	// PolicyClusterSingleton is the fixed rule that a cluster name has one
	// holder across every host of the coordination cluster: always block.
	PolicyClusterSingleton = "cluster_singleton"
)

// A Lease is permission for one resource: holder, durable generation and
// expiry. The generation grows with every grant of the resource and is
// never reused. A Lease value is a snapshot: its State was computed when it
// was read.
type Lease struct {
	ID         string    `json:"id"`
	Scope      Scope     `json:"scope"`
	Resource   string    `json:"resource"` // canonical: scope:key, with /** for subtree intents
	Holder     string    `json:"holder"`
	Generation int64     `json:"generation"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	State      State     `json:"state"`
	// Checkout is the physical top level of the worktree (file and intent
	// leases); empty for host singletons.
	Checkout string `json:"checkout,omitempty"`
	// Key is the canonical key: a slash-separated path relative to the
	// checkout ("" for its root) or the host name.
	Key string `json:"key"`
	// OwnerPID is the process recorded at acquisition (--pid), whose
	// proven death lifts a quarantine.
	OwnerPID    int        `json:"owner_pid,omitempty"`
	ReleasedAt  *time.Time `json:"released_at,omitempty"`
	ResolvedAt  *time.Time `json:"resolved_at,omitempty"`
	ResolvedHow string     `json:"resolved_how,omitempty"` // writer_stopped or owner_dead
	// Forced says who last renewed or released it without its lease
	// token (--force).
	Forced *Forced `json:"forced,omitempty"`
	// Clone names the clone of the repository that holds a shared lease,
	// when it is another clone than this one (its holder is that clone's).
	Clone string `json:"clone,omitempty"`
	// Recoverable: the lease is live (active or quarantined) and its
	// recorded owner process is proven dead, so it keeps nothing in use:
	// anyone may release it without its token (recorded as a recovery).
	// Set by List and LiveLeases, which judge the owner.
	Recoverable bool `json:"recoverable,omitempty"`
}

// Forced records who renewed or released a lease without its token: the
// caller process and user, and when.
type Forced struct {
	Op   string    `json:"op"` // renew or release
	At   time.Time `json:"at"`
	User string    `json:"user,omitempty"`
	By   Owner     `json:"by"` // the forcing process
}

// A Conflict is one existing lease that stands against a requested
// resource, with the policy key that decided what it gets.
type Conflict struct {
	Resource string `json:"resource"` // the requested resource
	Lease    Lease  `json:"lease"`    // the other holder's lease
	Policy   string `json:"policy"`   // the policy key that decided
	Reason   string `json:"reason"`
	// Recoverable: the other lease is active but its owner process is
	// proven dead, so anyone may release it (no token needed).
	Recoverable bool `json:"recoverable,omitempty"`
}
