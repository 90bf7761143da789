//go:build !linux

package provider

import (
	"os"
)

// canExchange: only Linux's renameat2 exchanges two folders in one rename
// here; elsewhere gc leaves records where they are.
const canExchange = false

func exchangeDirs(a, b string) error { return errExchangeUnsupported }

func renameNoReplace(a, b string) error {
	if _, err := os.Lstat(b); err == nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: os.ErrExist}
	}
	return os.Rename(a, b)
}
