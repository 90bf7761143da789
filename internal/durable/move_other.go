//go:build !linux

package durable

import (
	"errors"
	"os"

	"github.com/majlis-dev/majlis/wire"
)

// ErrCrossDevice means a move would cross file systems (a bind mount at
// the source, say). Nothing is ever copied across: the move is refused.
var ErrCrossDevice = wire.Sentinel("git_failed", "gitops: the move would cross file systems")

// MoveDir needs renameat2(RENAME_NOREPLACE), which only Linux has here:
// elsewhere it refuses, and reclaim with it.
func MoveDir(from, to string) error {
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.ErrUnsupported}
}

// MountPoint cannot tell here; MoveDir refuses anyway.
func MountPoint(path string) (bool, error) { return false, nil }

// mountRoot cannot tell here.
func mountRoot(int) bool { return false }
