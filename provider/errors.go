package provider

import (
	"errors"
	"strings"
)

// Sentinels callers branch on (errors.Is). cmd/majlis maps each to an exit
// code and a stable error code in one table.
var (
	ErrInvalidBinding  = errors.New("provider: invalid binding")
	ErrInvalidArgument = errors.New("provider: invalid argument")
	ErrNotInitialized  = errors.New("provider: repository not initialized")
	ErrNotRepository   = errors.New("provider: not a git repository")
	ErrAlreadyInit     = errors.New("provider: repository already initialized differently")
	ErrBindingLive     = errors.New("provider: binding already has a workspace that is not reclaimed")
	ErrNotFound        = errors.New("provider: no such workspace")
	ErrUnknownBase     = errors.New("provider: unknown base revision")
	ErrBranchExists    = errors.New("provider: branch already exists")
	// ErrBranchCheckedOut: --checkout named a branch that a worktree has
	// checked out (git allows a branch in one worktree only).
	ErrBranchCheckedOut = errors.New("provider: branch is checked out in another worktree")
	// ErrUnknownBranch: --checkout named a branch that does not exist.
	ErrUnknownBranch   = errors.New("provider: no such branch")
	ErrPathExists      = errors.New("provider: path already exists")
	ErrNested          = errors.New("provider: path lies inside another workspace")
	ErrReserved        = errors.New("provider: path overlaps a reserved reclaim target")
	ErrRequestConflict = errors.New("provider: request id already used with other arguments")
	ErrMalformed       = errors.New("provider: malformed record")
	ErrMissing         = errors.New("provider: workspace directory is missing")
	ErrIdentity        = errors.New("provider: workspace identity drifted")
	ErrInterrupted     = errors.New("provider: an earlier operation was interrupted")
	ErrWorkspaceLive   = errors.New("provider: workspace is in use by a live owner")
	ErrPeerOverlap     = errors.New("provider: a retained peer overlaps the target")
	ErrPreviewStale    = errors.New("provider: the preview changed since it was confirmed")
	ErrUnconfirmed     = errors.New("provider: reclaim needs confirmation")
	ErrDirtySubmodule  = errors.New("provider: a submodule has changes salvage cannot capture")
	ErrRepository      = errors.New("provider: workspace does not belong to the claimed repository")
	ErrWorktreeConfig  = errors.New("provider: git would act on another directory than the workspace")
	ErrLocked          = errors.New("provider: workspace is locked by someone else")
	ErrUnsafePath      = errors.New("provider: path lies inside a git directory")
	ErrTrash           = errors.New("provider: the workspace could not be moved to or deleted from its trash folder")
	ErrCrossDevice     = errors.New("provider: the workspace is on another file system than its folder")
	// ErrRecorded: a refusal or failure of one workspace of a bulk
	// reclaim, as its request record kept it (its own code is not kept).
	ErrRecorded = errors.New("provider: refused or failed, as recorded")
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
