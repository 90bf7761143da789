package wire

// A PolicyValue says what a conflict or an enforcement gap gets.
type PolicyValue string

// Policy values.
const (
	PolicyAllow PolicyValue = "allow" // proceed silently
	PolicyWarn  PolicyValue = "warn"  // proceed, with a warning naming the policy key
	PolicyBlock PolicyValue = "block" // refuse
)

// An AcquireResult is a successful
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

// A RenewResult lists the renewed leases.
type RenewResult struct {
	Leases []Lease `json:"leases"`
	// Warnings name quarantined leases that a renewal of all leases could
	// not renew.
	Warnings  []Warning `json:"warnings"`
	RequestID string    `json:"request_id,omitempty"`
	Replayed  bool      `json:"replayed"`
}

// A LeaseReleaseResult lists the released leases (with IDs, leases already
// released or resolved are listed unchanged: release is idempotent).
type LeaseReleaseResult struct {
	Leases    []Lease `json:"leases"`
	RequestID string  `json:"request_id,omitempty"`
	Replayed  bool    `json:"replayed"`
}

// A LeaseCheck reports the changed paths outside the holder's leases.
type LeaseCheck struct {
	Checkout string `json:"checkout"`
	Holder   string `json:"holder"`
	// Changed counts the changed paths the request named (both sides of
	// renames, untracked files included), each once.
	Changed int `json:"changed"`
	// Gaps lists changed paths (checkout-relative, as git reports them)
	// that no active lease of the holder in this checkout covers; empty
	// when the enforcement_gap policy is allow.
	Gaps      []string    `json:"gaps"`
	Warnings  []Warning   `json:"warnings"`
	Policy    PolicyValue `json:"policy"` // the value of enforcement_gap
	DecidedBy []string    `json:"decided_by"`
}
