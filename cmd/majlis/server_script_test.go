package main

import (
	"path/filepath"
	"syscall"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
)

// killScriptServers kills the servers that a script left running (it
// failed before stopping them): every live owner of a server lease under
// dir, verified by pid and start time.
func killScriptServers(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, "*", ".git", "majlis", "leases"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "*", ".git", "majlis", "leases"))
	for _, ld := range append(matches, more...) {
		d, err := reservation.Open(ld)
		if err != nil {
			continue
		}
		rec, err := d.Inspect("server")
		d.Close()
		if err != nil {
			continue
		}
		if o, err := procid.Of(rec.Owner.PID); err == nil && o.StartTime == rec.Owner.StartTime {
			syscall.Kill(rec.Owner.PID, syscall.SIGKILL)
		}
	}
}
