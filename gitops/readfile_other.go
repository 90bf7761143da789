//go:build !unix

package gitops

import "os"

// readSmallFile reads a small file such as a worktree's gitdir or HEAD.
func readSmallFile(path string) ([]byte, error) { return os.ReadFile(path) }
