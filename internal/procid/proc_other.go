//go:build !linux

package procid

import (
	"fmt"
	"runtime"

	"github.com/majlis-dev/majlis/wire"
)

// Identity (boot id, pid namespace, process start time) is read from
// Linux's /proc. On other systems majlis cannot prove an owner's identity,
// so Self fails, and callers refuse to create records no one could judge.
func readSelf() (Owner, error) {
	return Owner{}, fmt.Errorf("owner identity is implemented for Linux only, not %s", runtime.GOOS)
}

// Info is what the process table says about a process.
type Info struct {
	State     byte
	StartTime uint64
	PPID      int
}

// ErrNoProcess means the kernel says no process has the pid.
var ErrNoProcess = wire.Sentinel("internal", "no such process")

// ReadProc is implemented for Linux only.
func ReadProc(pid int) (Info, error) {
	return Info{}, fmt.Errorf("process start times are implemented for Linux only, not %s", runtime.GOOS)
}

func pidExists(pid int) (bool, error) {
	return false, fmt.Errorf("process liveness is implemented for Linux only, not %s", runtime.GOOS)
}
