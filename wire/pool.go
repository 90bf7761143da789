package wire

import "time"

// States of a pooled worktree (PoolWorktree.State).
const (
	PoolReady   = "ready"   // clean, detached, locked by majlis: allocate may take it
	PoolFilling = "filling" // its claim is published, the worktree not yet made (or a fill was interrupted)
	PoolTaken   = "taken"   // an allocation took it: it is, or is becoming, that workspace
	PoolAside   = "aside"   // it failed a check: never handed out; doctor names it
	// PoolDraining: a drain took it and is deleting it (or was
	// interrupted doing so: the next drain finishes it).
	PoolDraining = "draining"
)

// A PoolWorktree is one worktree of the warm pool, as pool list, fill and
// drain report it. Its JSON is part of the CLI contract.
type PoolWorktree struct {
	Name        string    `json:"name"` // the pooled worktree's claim binding (_pool-...)
	Path        string    `json:"path"`
	Base        string    `json:"base"` // the commit its HEAD is detached at
	State       string    `json:"state"`
	ClaimDigest string    `json:"claim_digest"`
	CreatedAt   time.Time `json:"created_at"`
	// Taker is the workspace (binding) an allocation took it for (taken).
	Taker string `json:"taker,omitempty"`
	// Reason says why it was set aside (aside), or why a drain left it.
	Reason string `json:"reason,omitempty"`
}

// A PoolResult is what pool list, fill and drain answer: the pool as it
// is after the command (Pool), what the command made (Created) and
// deleted (Drained), and what a drain left and why (Left). Every array is
// always present.
type PoolResult struct {
	Pool    []PoolWorktree `json:"pool"`
	Created []PoolWorktree `json:"created"`
	Drained []PoolWorktree `json:"drained"`
	Left    []PoolWorktree `json:"left"`
	// Stopped says why a fill stopped before the pool held its size (the
	// disk space the policy gives it), or null.
	Stopped *PoolStop `json:"stopped"`
}

// Why a fill stopped early (PoolStop.Reason): the policy key whose bound
// one more pooled worktree would have passed.
const (
	PoolStopMaxBytes   = "pool.max_bytes"  // the pooled worktrees together
	PoolStopBudget     = "trash.max_bytes" // the kept trash and the pool together
	PoolStopFreeSpace  = "trash.min_free"  // the disk's free space
	PoolStopUnmeasured = "unmeasured"      // the space taken could not be measured
)

// A PoolStop says why a fill made fewer pooled worktrees than asked.
type PoolStop struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PoolUse says whether an allocation took a pooled worktree (Used) and,
// when it did not, why (Reason: "disabled", "empty", "submodules",
// "another_file_system", "checks_failed", "worktree_settings",
// "processes_unknown", ...: docs/pool.md lists them).
type PoolUse struct {
	Used   bool   `json:"used"`
	Reason string `json:"reason,omitempty"`
	// Name is the pooled worktree taken (Used).
	Name string `json:"name,omitempty"`
}
