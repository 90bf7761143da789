package provider

import (
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinels callers branch on (errors.Is). cmd/majlis maps each to an exit
// code and a stable error code in one table.
var (
	ErrInvalidBinding  = wire.Sentinel("invalid_binding", "provider: invalid binding")
	ErrInvalidArgument = wire.Sentinel("invalid_argument", "provider: invalid argument")
	ErrNotInitialized  = wire.Sentinel("not_initialized", "provider: repository not initialized")
	ErrNotRepository   = wire.Sentinel("not_a_repository", "provider: not a git repository")
	ErrAlreadyInit     = wire.Sentinel("already_initialized", "provider: repository already initialized differently")
	ErrBindingLive     = wire.Sentinel("binding_live", "provider: binding already has a workspace that is not reclaimed")
	ErrNotFound        = wire.Sentinel("not_found", "provider: no such workspace")
	ErrUnknownBase     = wire.Sentinel("unknown_base", "provider: unknown base revision")
	ErrBranchExists    = wire.Sentinel("branch_exists", "provider: branch already exists")
	// ErrBranchCheckedOut: --checkout named a branch that a worktree has
	// checked out (git allows a branch in one worktree only).
	ErrBranchCheckedOut = wire.Sentinel("branch_checked_out", "provider: branch is checked out in another worktree")
	// ErrUnknownBranch: --checkout named a branch that does not exist.
	ErrUnknownBranch   = wire.Sentinel("unknown_branch", "provider: no such branch")
	ErrPathExists      = wire.Sentinel("path_exists", "provider: path already exists")
	ErrNested          = wire.Sentinel("nested_workspace", "provider: path lies inside another workspace")
	ErrReserved        = wire.Sentinel("reserved_target", "provider: path overlaps a reserved reclaim target")
	ErrRequestConflict = wire.Sentinel("request_conflict", "provider: request id already used with other arguments")
	ErrMalformed       = wire.Sentinel("malformed_record", "provider: malformed record")
	ErrMissing         = wire.Sentinel("workspace_missing", "provider: workspace directory is missing")
	ErrIdentity        = wire.Sentinel("identity_drift", "provider: workspace identity drifted")
	ErrInterrupted     = wire.Sentinel("interrupted", "provider: an earlier operation was interrupted")
	ErrWorkspaceLive   = wire.Sentinel("workspace_live", "provider: workspace is in use")
	ErrPeerOverlap     = wire.Sentinel("peer_overlap", "provider: a retained peer overlaps the target")
	ErrPreviewStale    = wire.Sentinel("preview_stale", "provider: the preview changed since it was confirmed")
	ErrUnconfirmed     = wire.Sentinel("unconfirmed", "provider: reclaim needs confirmation")
	// ErrNothingToRecover: workspace recover found no reclaim reservation.
	ErrNothingToRecover = wire.Sentinel("not_found", "provider: nothing to recover")
	// ErrHoldsWork: end --reclaim left the workspace, which holds work a
	// reclaim would salvage (its preview's digest is in the details).
	ErrHoldsWork      = wire.Sentinel("holds_work", "provider: the workspace holds work to salvage")
	ErrDirtySubmodule = wire.Sentinel("dirty_submodule", "provider: a submodule has changes salvage cannot capture")
	ErrRepository     = wire.Sentinel("repository_mismatch", "provider: workspace does not belong to the claimed repository")
	ErrWorktreeConfig = wire.Sentinel("worktree_config_mismatch", "provider: git would act on another directory than the workspace")
	ErrLocked         = wire.Sentinel("locked", "provider: workspace is locked by someone else")
	ErrUnsafePath     = wire.Sentinel("unsafe_path", "provider: path lies inside a git directory")
	ErrTrash          = wire.Sentinel("trash_failed", "provider: the workspace could not be moved to or deleted from its trash folder")
	ErrCrossDevice    = wire.Sentinel("cross_device", "provider: the workspace is on another file system than its folder")
	// ErrRecorded: a refusal or failure of one workspace of a bulk
	// reclaim, as its request record kept it (its own code is not kept).
	ErrRecorded = wire.Sentinel("recorded_failure", "provider: refused or failed, as recorded")
)

// An Error reports a refused or failed workspace operation with its facts.
type Error struct {
	Op      string // init, allocate, list, show, release, salvage
	Binding string
	Path    string // the file or directory concerned
	Peer    string // the other workspace or path involved, if any
	Reason  string
	Hint    string // what the user can do
	// Details are further facts for scripts (the JSON error's details),
	// such as the reason of a lock majlis did not set.
	Details map[string]any
	Err     error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Binding != "" {
		b.WriteString(" " + e.Binding)
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimPrefix(e.Err.Error(), "provider: "))
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.Path != "" && !strings.Contains(e.Reason, e.Path) {
		b.WriteString(" (" + e.Path + ")")
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// ErrorDetails are the error's facts, the details of its refusal: op,
// binding, path, peer, reason, hint and Details.
func (e *Error) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.Op}
	for k, v := range map[string]string{"binding": e.Binding, "path": e.Path, "peer": e.Peer, "reason": e.Reason, "hint": e.Hint} {
		if v != "" {
			d[k] = v
		}
	}
	for k, v := range e.Details {
		if _, taken := d[k]; !taken {
			d[k] = v
		}
	}
	return d
}
