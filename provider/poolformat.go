package provider

import (
	"bytes"
	"errors"
	"fmt"
)

// The state format of the warm pool.
//
// A pooled worktree has a claim of its own kind (Claim.Kind ==
// ClaimKindPool) in the claims folder, under a binding name of the pool's
// (poolBindingPrefix), so that every reader of the claims (peers, list
// --all, doctor, the journal's fast check) sees it and nothing overlaps it.
// A claim of any kind but the workspace's is sealed with format
// majlis.claim/2; workspaces' claims stay majlis.claim/1, so a repository
// that never used the pool stays readable by an older majlis. An older
// majlis reads only majlis.claim/1: it refuses a pooled worktree's records
// ("unknown format "majlis.claim/2" (this majlis reads
// "majlis.claim/1")", naming the file) and keeps the place the claims
// journal gives for it as a retained peer, as it does for any record it
// cannot read, instead of misreading the pooled worktree as a workspace.

const (
	// formatClaim2 is the format of a claim with a Kind.
	formatClaim2 = "majlis.claim/2"
	// ClaimKindPool is the kind of a pooled worktree's claim.
	ClaimKindPool = "pool"
)

// Event kinds of a pooled worktree's claim (besides created and
// reclaimed, which mean what they mean for a workspace: made, and
// deleted by a drain).
const (
	// EventTaken: an allocation took the pooled worktree (Taker,
	// RequestID). Published no-clobber before anything else is done with
	// it, so that two allocations never take the same one.
	EventTaken = "taken"
	// EventAside: the pooled worktree failed a check and is set aside:
	// never handed out; doctor names it (Reason says why).
	EventAside = "aside"
	// EventHanded: the hand-out that took it finished: the pooled
	// worktree is now that workspace, whose claim stands for it (Taker).
	EventHanded = "handed"
	// EventDraining: a drain is deleting the pooled worktree. Published
	// before it moves the folder anywhere: TrashPath is where the drain
	// moves it aside (drainAsidePath), AdminEntry git's entry of it,
	// Dev/Ino the folder's identity, RequestID the drain's id. A drain
	// takes a ready one first with its own taken event (Taker: the pooled
	// worktree's own binding), the one slot a hand-out takes it with.
	EventDraining = "draining"
)

// claimFormatOf is the format a claim is sealed with.
func claimFormatOf(c *Claim) string {
	if c.Kind != "" {
		return formatClaim2
	}
	return formatClaim
}

// checkClaimKind checks a claim's kind against its format.
func checkClaimKind(c *Claim) error {
	switch {
	case c.Format == formatClaim && c.Kind != "":
		return fmt.Errorf("a %s claim has no kind (%q)", formatClaim, c.Kind)
	case c.Format == formatClaim2 && c.Kind != ClaimKindPool:
		return fmt.Errorf("unknown claim kind %q", c.Kind)
	case c.Format != formatClaim && c.Format != formatClaim2:
		return fmt.Errorf("unknown claim format %q", c.Format)
	case c.Kind == ClaimKindPool && (!c.Detached || c.Checkout || c.Restore != "" || c.FromTrash != ""):
		return errors.New("a pooled worktree's claim is detached and nothing else")
	}
	return nil
}

// sealedClaimFormat returns the format a reader of a claim record must
// ask for: majlis.claim/2 when the record says so, else wantFormat
// (every claim reader asks for majlis.claim/1).
func sealedClaimFormat(data []byte, kind, wantFormat string) string {
	if kind == "claim" && wantFormat == formatClaim &&
		bytes.HasPrefix(data, []byte(`{"claim":{"format":"`+formatClaim2+`"`)) {
		return formatClaim2
	}
	return wantFormat
}

// isPool reports whether rec is a pooled worktree's claim.
func (r *claimRecord) isPool() bool { return r.Claim.Kind == ClaimKindPool }
