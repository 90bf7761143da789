//go:build !linux

package provider

import "errors"

// treeStamp is Linux's (pool_stamp_linux.go); elsewhere a pooled
// worktree is always checked with git status.
func treeStamp(string) (string, int, error) {
	return "", 0, errors.New("no stamp on this system")
}
