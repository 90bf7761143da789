//go:build !unix

package pathid

import "io/fs"

// On systems without a Unix stat buffer no identity can be read, and every
// check that needs one fails closed with ErrNoIdentity.

func sysFileID(fs.FileInfo) (FileID, bool) { return FileID{}, false }

func sysNlink(fs.FileInfo) (uint64, bool) { return 0, false }
