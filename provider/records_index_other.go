//go:build !linux

package provider

import "io/fs"

// keyOf: the claims index is used on Linux only, where it has been
// measured and tested; elsewhere every binding is read from its records.
func keyOf(fs.FileInfo) (statKey, bool) { return statKey{}, false }
