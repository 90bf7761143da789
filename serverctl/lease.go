package serverctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/wire"
)

// The server lease: its resource name in the repository's lease folder,
// and the metadata keys its record carries.
const (
	Resource = "server"
	Purpose  = "server"

	metaRepository = "repository" // the repository id
	metaAddress    = "address"    // 127.0.0.1:PORT
	metaHolder     = "holder"     // the leaseholder key: server:<repository id>
	metaVersion    = "version"    // the server's majlis version
	metaAPI        = "api"        // the API version of its routes
)

// APIVersion is the version of the server's HTTP routes. A probe that
// finds another one reports version-mismatch.
const APIVersion = wire.APIVersion

// startLockName is the flock that serializes starters, in the lease folder.
const startLockName = "server-start.lock"

// leaseDir is the repository's lease folder.
func leaseDir(stateDir string) string { return filepath.Join(stateDir, "leases") }

// holderKey is the leaseholder key a server of repository id records.
func holderKey(id string) string { return "server:" + id }

// LeaseMetadata is what the server lease of a server for repository id,
// listening on address and running majlis version, records: what a probe
// compares with the server's answer.
func LeaseMetadata(id, address, version string) map[string]string {
	return map[string]string{metaRepository: id, metaAddress: address, metaHolder: holderKey(id),
		metaVersion: version, metaAPI: APIVersion}
}

// checkPrivate verifies that the lease folder and, when it exists, the
// server lease file belong to the calling user and are closed to everyone
// else: the lease carries the bearer token of the server's API, and a
// lease another user could write would let them impersonate the server.
func checkPrivate(dir string) error {
	uid := os.Geteuid()
	fi, err := os.Lstat(dir)
	if err != nil {
		return &Error{Op: "check", Path: dir, Err: err}
	}
	if err := private(fi, uid, true); err != "" {
		return &Error{Op: "check", Path: dir, Err: ErrUnsafeState, Reason: err,
			Hint: "make it yours and private: chmod 700 " + dir}
	}
	lp := filepath.Join(dir, Resource+".lease")
	fi, err = os.Lstat(lp)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Op: "check", Path: lp, Err: err}
	}
	if err := private(fi, uid, false); err != "" {
		return &Error{Op: "check", Path: lp, Err: ErrUnsafeState, Reason: err,
			Hint: "a lease file majlis wrote is 0600 and yours; inspect " + lp + " and remove it if no server uses it"}
	}
	return nil
}

func private(fi os.FileInfo, uid int, dir bool) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case dir && !fi.IsDir():
		return "not a directory"
	case !dir && !fi.Mode().IsRegular():
		return "not a regular file"
	case !ok:
		return "its owner cannot be read"
	case int(st.Uid) != uid:
		return fmt.Sprintf("owned by uid %d, not by this user (uid %d)", st.Uid, uid)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Sprintf("mode %#o lets other users in (want no group or other permissions)", fi.Mode().Perm())
	}
	return ""
}

// OpenLeases opens the repository's lease folder (in its state folder)
// after checking that it and the server lease are private to this user.
func OpenLeases(stateDir string) (*reservation.Dir, error) {
	d, err := reservation.Open(leaseDir(stateDir))
	if err != nil {
		return nil, err
	}
	if err := checkPrivate(d.Path()); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}
