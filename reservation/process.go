package reservation

import (
	"fmt"
	"os"
)

// ProcessOwner returns the owner identity of the running process pid on
// this host: the facts a lease records, so that the process can later be
// judged alive or dead exactly (a reused pid is never taken for it).
func ProcessOwner(pid int) (Owner, error) {
	self, err := (&Dir{}).owner()
	if err != nil {
		return Owner{}, err
	}
	if pid == os.Getpid() {
		return self, nil
	}
	info, err := readProc(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if info.state == 'Z' || info.state == 'X' {
		return Owner{}, fmt.Errorf("process %d: %w (it has exited)", pid, errNoProcess)
	}
	o := self
	o.PID, o.StartTime = pid, info.startTime
	return o, nil
}

// IsSelfOrAncestor reports whether the process o is the calling process
// or one of its ancestors (its parent, the parent's parent, ...), exactly:
// same machine, boot and pid namespace, same pid and start time, so a
// reused pid is never taken for it. Anything that cannot be read answers
// false, never true.
func IsSelfOrAncestor(o Owner) bool {
	self, err := (&Dir{}).owner()
	if err != nil || o.MachineID != self.MachineID || o.BootID != self.BootID || o.PIDNamespace != self.PIDNamespace {
		return false
	}
	pid := os.Getpid()
	for range 4096 { // a process tree is never this deep; stop on a cycle
		info, err := readProc(pid)
		if err != nil {
			return false
		}
		if pid == o.PID && info.startTime == o.StartTime {
			return true
		}
		if pid <= 1 || info.ppid <= 0 || info.ppid == pid {
			return false
		}
		pid = info.ppid
	}
	return false
}

// JudgeOwner judges, by the rules of lease recovery (docs/leases.md) but
// without a witness lock, whether the process o is alive, proven dead or
// unknown from this host, and says why.
func JudgeOwner(o Owner) (Liveness, string) {
	return (&Dir{}).judgeOwner(o)
}
