//go:build !linux

package reservation

import (
	"errors"
	"fmt"
	"runtime"
)

// Owner identity (boot id, pid namespace, process start time) is read from
// Linux's /proc. On other systems majlis cannot prove an owner's identity,
// so it refuses to create leases rather than create unrecoverable ones.
func readSelfOwner() (Owner, error) {
	return Owner{}, fmt.Errorf("owner identity is implemented for Linux only, not %s", runtime.GOOS)
}

type procInfo struct {
	state     byte
	startTime uint64
	ppid      int
}

var errNoProcess = errors.New("no such process")

func readProc(pid int) (procInfo, error) {
	return procInfo{}, fmt.Errorf("process start times are implemented for Linux only, not %s", runtime.GOOS)
}

func pidExists(pid int) (bool, error) {
	return false, fmt.Errorf("process liveness is implemented for Linux only, not %s", runtime.GOOS)
}
