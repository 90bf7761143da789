//go:build !linux

package provider

import "errors"

// treeStamp is Linux's (pool_stamp_linux.go); elsewhere a pooled
// worktree is always checked with git status.
func treeStamp(string, []string) (string, int, []string, error) {
	return "", 0, nil, errors.New("no stamp on this system")
}
