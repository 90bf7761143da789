// Package procid identifies processes precisely enough that a reused pid
// is never taken for the process that had it before, and judges from this
// host whether such a process is alive, proven dead, or unknown.
//
// An Owner is the identity a record (a lease file, a claim, a ledger row)
// stores of the process that wrote it: host, machine id, boot id, pid
// namespace, pid and the kernel's start time of that pid. Judging it never
// answers "dead" without proof: another machine, another pid namespace or
// an unreadable process table is Unknown, never Dead.
//
// Identities are read from Linux's /proc. On other systems Self fails, so
// that callers refuse to write records no one could ever judge.
package procid

import (
	"fmt"
	"os"
	"sync"

	"github.com/majlis-dev/majlis/wire"
)

// An Owner identifies a process precisely enough that a reused pid is
// never taken for it (wire.Owner). Its JSON form is part of the on-disk
// records that embed it (docs/leases.md).
type Owner = wire.Owner

// Short abbreviates a machine or boot id for messages.
func Short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

var self struct {
	sync.Mutex
	o Owner
}

// Self returns the identity of the calling process, read once per process
// (per pid: a forked child reads its own).
func Self() (Owner, error) {
	self.Lock()
	defer self.Unlock()
	if self.o.PID == os.Getpid() {
		return self.o, nil
	}
	o, err := readSelf()
	if err != nil {
		return Owner{}, err
	}
	self.o = o
	return o, nil
}

// Of returns the identity of the running process pid on this host, so
// that the process can later be judged alive or dead exactly.
func Of(pid int) (Owner, error) {
	me, err := Self()
	if err != nil {
		return Owner{}, err
	}
	if pid == os.Getpid() {
		return me, nil
	}
	info, err := ReadProc(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("process %d: %w", pid, err)
	}
	if info.State == 'Z' || info.State == 'X' {
		return Owner{}, fmt.Errorf("process %d: %w (it has exited)", pid, ErrNoProcess)
	}
	o := me
	o.PID, o.StartTime = pid, info.StartTime
	return o, nil
}

// IsSelfOrAncestor reports whether the process o is the calling process
// or one of its ancestors (its parent, the parent's parent, ...), exactly:
// same machine, boot and pid namespace, same pid and start time, so a
// reused pid is never taken for it. Anything that cannot be read answers
// false, never true.
func IsSelfOrAncestor(o Owner) bool {
	me, err := Self()
	if err != nil || o.MachineID != me.MachineID || o.BootID != me.BootID || o.PIDNamespace != me.PIDNamespace {
		return false
	}
	pid := os.Getpid()
	for range 4096 { // a process tree is never this deep; stop on a cycle
		info, err := ReadProc(pid)
		if err != nil {
			return false
		}
		if pid == o.PID && info.StartTime == o.StartTime {
			return true
		}
		if pid <= 1 || info.PPID <= 0 || info.PPID == pid {
			return false
		}
		pid = info.PPID
	}
	return false
}
