package wire

import "time"

// A Workspace is what list and show report. Its JSON is part of the CLI
// contract: fields may be added, never renamed or removed.
type Workspace struct {
	ID           string     `json:"id"`
	Binding      string     `json:"binding"`
	Path         string     `json:"path"`
	PhysicalPath string     `json:"physical_path"`
	Branch       string     `json:"branch"`
	Base         string     `json:"base"`
	Head         string     `json:"head"`
	State        string     `json:"state"`
	ClaimDigest  string     `json:"claim_digest"`
	CreatedAt    time.Time  `json:"created_at"`
	Intent       []string   `json:"intent"`
	RequestID    string     `json:"request_id"`
	OwnerPID     int        `json:"owner_pid,omitempty"`
	ReleasedAt   *time.Time `json:"released_at,omitempty"`
	ReclaimedAt  *time.Time `json:"reclaimed_at,omitempty"`
	SalvageRef   string     `json:"salvage_ref,omitempty"`
	// TrashPath and TrashKeptUntil name the trash folder a reclaim kept
	// (--keep-trash) while it is there: workspace restore --from-trash
	// puts it back.
	TrashPath      string     `json:"trash_path,omitempty"`
	TrashKeptUntil *time.Time `json:"trash_kept_until,omitempty"`
	// TrashEntry names git's entry of a workspace whose folder was gone
	// (moved or deleted by hand), kept aside in majlis's trash for the
	// undo window instead of a trash folder; TrashKeptUntil,
	// TrashSizeBytes and TrashHalfPurged then speak of it. Nothing of it
	// is restored (there is no folder): it holds what git's entry held
	// (HEAD, index, per-worktree refs, reflogs), all salvaged.
	TrashEntry string `json:"trash_entry,omitempty"`
	// TrashSizeBytes is the disk space the kept trash folder takes;
	// TrashHalfPurged, that a purge of it began and did not finish (it may
	// be half deleted; restore --from-trash refuses it).
	TrashSizeBytes  *int64 `json:"trash_size_bytes,omitempty"`
	TrashHalfPurged bool   `json:"trash_half_purged,omitempty"`
	// TrashMissing: the kept trash folder is gone from TrashPath (moved
	// or deleted by hand); doctor says what to do (trash_missing).
	TrashMissing bool `json:"trash_missing,omitempty"`
	// TrashPurgedAt and TrashPurged say when the kept trash folder went,
	// and why: expired, max_bytes or min_free (purged early for space),
	// or that restore --from-trash moved it back.
	TrashPurgedAt *time.Time `json:"trash_purged_at,omitempty"`
	TrashPurged   string     `json:"trash_purged,omitempty"`
	DetachedFrom  string     `json:"detached_from,omitempty"`
	Dirty         *bool      `json:"dirty,omitempty"`   // show only
	Changes       *Counts    `json:"changes,omitempty"` // show only
	// DirtySubmodules lists submodules with changes salvage cannot capture (show only).
	DirtySubmodules []string `json:"dirty_submodules"`
	// Damage, for state damaged only: which file, why, and where the
	// workspace may be (damage.go).
	Damage *Damage `json:"damage,omitempty"`
	// Released says whether its task handed it back (majlis workspace
	// release, majlis end): its owner process stops counting.
	Released bool `json:"released"`
	// The one look of list (list.go): the recorded owner's state (alive,
	// exited, unknown; absent when none is recorded), the leases that keep
	// it in use, and whether a reclaim would go ahead now, else what
	// blocks it.
	OwnerState  string        `json:"owner_state,omitempty"`
	OwnerAlive  *bool         `json:"owner_alive,omitempty"`
	Leases      *LeaseSummary `json:"leases,omitempty"`
	Reclaimable *bool         `json:"reclaimable,omitempty"`
	BlockedBy   []Blocker     `json:"blocked_by"`
	// Processes are the processes whose working directory or open files
	// are inside it (list): a dead owner does not prove they stopped.
	Processes []Process `json:"processes"`
	// Pool (allocate only) says whether the workspace was a pooled
	// worktree handed out, and when not, why (pool.md).
	Pool *PoolUse `json:"pool,omitempty"`
}

// A LeaseRef names one lease a workspace's task (or someone working in it)
// holds.
type LeaseRef struct {
	ID        string    `json:"id"`
	Resource  string    `json:"resource"`
	Holder    string    `json:"holder"`
	State     string    `json:"state"`
	ExpiresAt time.Time `json:"expires_at"`
	// OwnerPID is the owner process the lease records (0: none).
	// Recoverable: that owner is proven dead, so the lease keeps nothing
	// in use; a reclaim retires it as recovered.
	OwnerPID    int  `json:"owner_pid,omitempty"`
	Recoverable bool `json:"recoverable"`
}

// LeaseSummary counts a workspace's leases and names the first few.
type LeaseSummary struct {
	Count int        `json:"count"`
	First []LeaseRef `json:"first"`
}

// A Blocker is one reason a reclaim of the workspace would refuse now.
type Blocker struct {
	Kind     string `json:"kind"`
	Detail   string `json:"detail"` // in words
	Hint     string `json:"hint"`   // what resolves it, in words and commands; "" when nothing is to be done but wait
	OwnerPID int    `json:"owner_pid,omitempty"`
	// Leases are the leases that block (kind leases); Processes, the
	// processes that work inside it (kind processes).
	Leases    []LeaseRef `json:"leases"`
	Processes []Process  `json:"processes"`
	Peer      string     `json:"peer,omitempty"` // the nested workspace's binding
	Path      string     `json:"path,omitempty"`
}

// A Process is one process that uses a folder, with the first way it was
// found to use it.
type Process struct {
	PID     int    `json:"pid"`
	Command string `json:"command"` // its name, as the kernel keeps it (at most 15 bytes)
	// Use is how it uses the folder: "cwd" (its working directory),
	// "root", "exe" (its program file), "file" (an open file) or "map"
	// (a file mapped in its memory, which it can write with no file open).
	Use  string `json:"use"`
	Path string `json:"path"` // the path inside the folder
}

// A KnownPath is a place a damaged binding's workspace may occupy.
type KnownPath struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// A Damage reports a binding whose records cannot all be read. Its JSON
// is part of the CLI contract (list, doctor).
type Damage struct {
	Binding string `json:"binding"`
	File    string `json:"file"`   // the first file that failed to read
	Reason  string `json:"reason"` // why
	// Paths are the places the binding's workspaces may occupy, each with
	// the trustworthy source that names it.
	Paths []KnownPath `json:"paths"`
	// Located reports that every claim of the binding that cannot be read
	// was found in the journal or git's admin entries.
	Located bool `json:"located"`
	// Unlocated lists the claim files (or sequence numbers) found nowhere.
	Unlocated []string `json:"unlocated"`
}
