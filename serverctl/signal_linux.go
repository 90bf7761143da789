package serverctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"golang.org/x/sys/unix"
)

// errSignalRefused: the process is not the lease's owner (any more).
var errSignalRefused = errors.New("server: refused to signal")

// Terminate sends TERM, then KILL after grace, to the process o names,
// and waits for it to die. Each signal goes through a pidfd opened before
// the owner's start time is verified, so it cannot reach a process that
// reused the pid. A process whose start time differs is never signalled.
func Terminate(ctx context.Context, o procid.Owner, grace time.Duration) ([]string, error) {
	var sent []string
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGKILL} {
		fd, err := unix.PidfdOpen(o.PID, 0)
		if errors.Is(err, unix.ESRCH) {
			return sent, nil // already gone
		}
		if err != nil {
			return sent, fmt.Errorf("pidfd_open %d: %w", o.PID, err)
		}
		// The pidfd now pins one process; it must be the lease's owner.
		if l, why := procid.Judge(o); l != procid.Alive {
			unix.Close(fd)
			if l == procid.Dead && len(sent) > 0 {
				return sent, nil // it died of the earlier signal
			}
			if l == procid.Dead {
				return sent, nil
			}
			return sent, fmt.Errorf("%w pid %d: %s", errSignalRefused, o.PID, why)
		}
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
		if err != nil && !errors.Is(err, unix.ESRCH) {
			unix.Close(fd)
			return sent, fmt.Errorf("signal %d: %w", o.PID, err)
		}
		sent = append(sent, unix.SignalName(sig)[3:])
		limit := grace
		if sig == unix.SIGKILL {
			limit = 10 * time.Second
		}
		dead := waitExit(ctx, fd, o, limit)
		unix.Close(fd)
		if dead {
			return sent, nil
		}
	}
	return sent, fmt.Errorf("pid %d survived SIGKILL", o.PID)
}

// waitExit waits up to limit for the pidfd to become readable (the
// process exited), or for the owner to be judged dead (a zombie).
func waitExit(ctx context.Context, fd int, o procid.Owner, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 20)
		if n > 0 {
			return true
		}
		if l, _ := procid.Judge(o); l == procid.Dead {
			return true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
	}
}
