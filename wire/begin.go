package wire

// An AllocateResult is a workspace allocated with ports.
type AllocateResult struct {
	Workspace *Workspace `json:"workspace"`
	// Ports are the free ports granted to the binding (host:port:N
	// leases, holder the binding), in order; empty without --ports.
	Ports  []int   `json:"ports"`
	Leases []Lease `json:"leases"`
	// Token is the lease token generated for the port leases (none was
	// supplied), returned this once.
	Token string `json:"token,omitempty"`
}

// A BeginResult is a begun task: its workspace and its intent leases.
type BeginResult struct {
	Task      string     `json:"task"`
	Workspace *Workspace `json:"workspace"` // nil with Shared
	// Checkout is the worktree the intents were declared in: the
	// workspace's, or (Shared) the current one.
	Checkout  string    `json:"checkout"`
	Leases    []Lease   `json:"leases"`
	Warnings  []Warning `json:"warnings"`
	DecidedBy []string  `json:"decided_by"`
	RequestID string    `json:"request_id"`
	// Replayed: the leases were granted by an earlier call with the same
	// request id; nothing new was granted now.
	Replayed bool `json:"replayed"`
	// Token is the lease token generated for the leases (none was
	// supplied), returned this once.
	Token string `json:"token,omitempty"`
	// Ports are the ports granted for BeginOptions.Ports, in order.
	Ports []int `json:"ports"`
}

// A CheckResult is admission's check of the checkout the provider was
// opened in, with where its holder came from.
type CheckResult struct {
	*LeaseCheck
	// HolderSource is HolderGiven, HolderWorkspace or HolderDefault; empty
	// when nothing was checked.
	HolderSource string `json:"holder_source"`
	// Skipped: no holder was found and IfHolder asked for no error;
	// nothing was checked or recorded.
	Skipped bool `json:"skipped"`
}
