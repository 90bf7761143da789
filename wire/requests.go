package wire

// The requests of the HTTP API (docs/MCP.md), one per CLI command. Their
// fields are the command's flags in snake_case; the MCP tools take the
// same objects. A binding or lease id that the route names in its path
// may be left out of the body. Durations are Go duration strings ("90s").
// Relative paths are taken from Cwd, which must then be absolute: the
// server's own working directory means nothing to its callers.

// AllocateRequest is 'majlis workspace allocate'.
type AllocateRequest struct {
	Binding     string   `json:"binding" jsonschema:"the task id the workspace is for: 1 to 100 letters, digits, '.', '_' or '-'"`
	Base        string   `json:"base,omitempty" jsonschema:"revision to start from; default HEAD of the main worktree"`
	Branch      string   `json:"branch,omitempty" jsonschema:"new branch to create; default majlis/BINDING"`
	Checkout    string   `json:"checkout,omitempty" jsonschema:"an existing branch to check out as it is, instead of a new branch"`
	Path        string   `json:"path,omitempty" jsonschema:"where to create the worktree (absolute, or relative to cwd); default WORKSPACE_ROOT/BINDING"`
	Intent      []string `json:"intent,omitempty" jsonschema:"repository paths the task will touch, literal or ending in /**"`
	OwnerPID    int      `json:"owner_pid,omitempty" jsonschema:"a process whose life marks the workspace as in use"`
	AllowNested bool     `json:"allow_nested,omitempty" jsonschema:"allow a path inside another worktree"`
	NoPool      bool     `json:"no_pool,omitempty" jsonschema:"make the worktree with git worktree add even when a pooled worktree is ready"`
	Ports       int      `json:"ports,omitempty" jsonschema:"also grant this many free ports to the binding"`
	Token       string   `json:"token,omitempty" jsonschema:"lease token for the port leases; omitted: one is generated and returned once"`
	RequestID   string   `json:"request_id,omitempty" jsonschema:"idempotency key: a retry with the same id returns the recorded result"`
	Cwd         string   `json:"cwd,omitempty" jsonschema:"absolute directory that a relative path is taken from"`
}

// ListRequest is 'majlis workspace list'.
type ListRequest struct {
	All    bool `json:"all,omitempty" jsonschema:"include reclaimed workspaces"`
	Status bool `json:"status,omitempty" jsonschema:"add each workspace's change counts (one git status each)"`
}

// BindingRequest names one workspace: 'majlis workspace show' and
// 'majlis workspace reclaim --preview'.
type BindingRequest struct {
	Binding string `json:"binding" jsonschema:"the workspace's binding (task id)"`
}

// SalvageRequest is 'majlis workspace salvage'.
type SalvageRequest struct {
	Binding   string `json:"binding" jsonschema:"the workspace's binding (task id)"`
	Message   string `json:"message,omitempty" jsonschema:"salvage commit message"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// ReleaseRequest is 'majlis workspace release' and 'majlis workspace recover'.
type ReleaseRequest struct {
	Binding   string `json:"binding" jsonschema:"the workspace's binding (task id)"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// ReclaimRequest is 'majlis workspace reclaim --confirm DIGEST | --yes'.
type ReclaimRequest struct {
	Binding           string `json:"binding" jsonschema:"the workspace's binding (task id)"`
	Confirm           string `json:"confirm,omitempty" jsonschema:"the digest of the preview to carry out (sha256:...)"`
	Yes               bool   `json:"yes,omitempty" jsonschema:"proceed without comparing with a preview (the safety checks still run)"`
	SalvageSubmodules bool   `json:"salvage_submodules,omitempty" jsonschema:"salvage dirty submodules too, instead of refusing"`
	KeepTrash         string `json:"keep_trash,omitempty" jsonschema:"keep the moved workspace in its trash folder this long (a Go duration; 0 deletes it at once) instead of the policy's trash.keep (default 24h)"`
	RequestID         string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// RestoreRequest is 'majlis workspace restore'.
type RestoreRequest struct {
	Binding   string `json:"binding" jsonschema:"the binding whose salvage to restore"`
	Salvage   int    `json:"salvage,omitempty" jsonschema:"restore refs/majlis/salvage/BINDING/N; default the latest"`
	Path      string `json:"path,omitempty" jsonschema:"where to put the workspace (must not exist; absolute, or relative to cwd)"`
	Branch    string `json:"branch,omitempty" jsonschema:"a new branch at the salvage's HEAD; default the workspace's own"`
	FromTrash bool   `json:"from_trash,omitempty" jsonschema:"move the workspace back from the trash folder its reclaim kept"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key"`
	Cwd       string `json:"cwd,omitempty" jsonschema:"absolute directory that a relative path is taken from"`
}

// AcquireRequest is 'majlis lease acquire'.
type AcquireRequest struct {
	Holder    string   `json:"holder" jsonschema:"who holds the leases (a task id, an agent name)"`
	Resources []string `json:"resources" jsonschema:"file:PATH, intent:PATH, intent:DIR/**, host:NAME (such as host:port:3000 or host:port:auto)"`
	TTL       string   `json:"ttl,omitempty" jsonschema:"lifetime of the leases, a Go duration; default 10m"`
	OwnerPID  int      `json:"owner_pid,omitempty" jsonschema:"a process whose life marks the leases in use"`
	Token     string   `json:"token,omitempty" jsonschema:"the lease token; omitted: one is generated and returned once"`
	RequestID string   `json:"request_id,omitempty" jsonschema:"idempotency key"`
	Checkout  string   `json:"checkout,omitempty" jsonschema:"absolute directory inside the worktree that file and intent resources belong to; default cwd, else the server's worktree"`
	Cwd       string   `json:"cwd,omitempty" jsonschema:"absolute directory that relative resource paths are taken from"`
}

// RenewRequest is 'majlis lease renew'.
type RenewRequest struct {
	Holder    string   `json:"holder" jsonschema:"whose leases to renew"`
	IDs       []string `json:"ids,omitempty" jsonschema:"lease ids; default every active lease of the holder"`
	TTL       string   `json:"ttl,omitempty" jsonschema:"new lifetime from now, a Go duration; default 10m"`
	Token     string   `json:"token,omitempty" jsonschema:"the lease token given or returned at acquire"`
	Force     bool     `json:"force,omitempty" jsonschema:"act without the token (recorded)"`
	RequestID string   `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// LeaseReleaseRequest is 'majlis lease release'.
type LeaseReleaseRequest struct {
	Holder    string   `json:"holder" jsonschema:"whose leases to release"`
	IDs       []string `json:"ids,omitempty" jsonschema:"lease ids; default every lease of the holder"`
	Token     string   `json:"token,omitempty" jsonschema:"the lease token given or returned at acquire"`
	Force     bool     `json:"force,omitempty" jsonschema:"act without the token (recorded)"`
	RequestID string   `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// LeaseListRequest is 'majlis lease list'.
type LeaseListRequest struct {
	Holder string `json:"holder,omitempty" jsonschema:"only this holder's leases"`
	All    bool   `json:"all,omitempty" jsonschema:"include released and resolved leases"`
}

// ResolveRequest is 'majlis lease resolve'.
type ResolveRequest struct {
	ID            string `json:"id" jsonschema:"the quarantined lease's id"`
	WriterStopped bool   `json:"writer_stopped" jsonschema:"attest that the lease's writer has stopped"`
	RequestID     string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// BeginRequest is 'majlis begin'.
type BeginRequest struct {
	Task      string   `json:"task" jsonschema:"the task id: the workspace's binding and the leases' holder"`
	Paths     []string `json:"paths" jsonschema:"repository paths the task will touch, literal or ending in /**"`
	Base      string   `json:"base,omitempty" jsonschema:"revision the workspace starts from; default HEAD of the main worktree"`
	Shared    bool     `json:"shared,omitempty" jsonschema:"declare the intents in the checkout named by checkout (default the server's worktree); allocate no workspace"`
	TTL       string   `json:"ttl,omitempty" jsonschema:"lifetime of the intent leases, a Go duration; default 10m"`
	OwnerPID  int      `json:"owner_pid,omitempty" jsonschema:"the task's process: its life marks the workspace and leases in use"`
	Ports     int      `json:"ports,omitempty" jsonschema:"also grant this many free ports to the task"`
	Token     string   `json:"token,omitempty" jsonschema:"the lease token; omitted: one is generated and returned once"`
	RequestID string   `json:"request_id,omitempty" jsonschema:"idempotency key: a retry returns the recorded result or resumes"`
	Checkout  string   `json:"checkout,omitempty" jsonschema:"with shared: an absolute directory in the checkout to declare the intents in"`
	NoPool    bool     `json:"no_pool,omitempty" jsonschema:"make the worktree with git worktree add even when a pooled worktree is ready"`
}

// EndRequest is 'majlis end': release the task's leases, then its
// workspace (its files stay until reclaimed, unless reclaim and clean);
// a task without a workspace (begun shared) has its leases released.
type EndRequest struct {
	Task      string `json:"task" jsonschema:"the task id given to begin"`
	Token     string `json:"token,omitempty" jsonschema:"the lease token of the task's leases"`
	Force     bool   `json:"force,omitempty" jsonschema:"release the leases without the token (recorded)"`
	Reclaim   bool   `json:"reclaim,omitempty" jsonschema:"then reclaim the workspace if it is clean (nothing to salvage); otherwise not_reclaimed says why"`
	RequestID string `json:"request_id,omitempty" jsonschema:"idempotency key"`
}

// CheckRequest is 'majlis check'.
type CheckRequest struct {
	Checkout string `json:"checkout" jsonschema:"absolute directory in the checkout whose changed files to check"`
	Holder   string `json:"holder,omitempty" jsonschema:"whose leases to compare with; default the workspace's binding"`
	IfHolder bool   `json:"if_holder,omitempty" jsonschema:"without any holder, check nothing and succeed"`
}

// HeartbeatRequest asks the server to keep a holder's leases renewed.
type HeartbeatRequest struct {
	Holder string `json:"holder" jsonschema:"whose leases to keep renewed"`
	Token  string `json:"token,omitempty" jsonschema:"the lease token of the holder's leases"`
	TTL    string `json:"ttl,omitempty" jsonschema:"lifetime each renewal gives, a Go duration; default 10m"`
}
