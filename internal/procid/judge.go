package procid

import (
	"errors"
	"fmt"
)

// Liveness is what can be proven about a process from this host.
type Liveness string

const (
	Alive   Liveness = "alive"   // the process is running
	Dead    Liveness = "dead"    // proven dead: nothing of it can still write
	Unknown Liveness = "unknown" // cannot be proven either way from here
)

// Judge judges, from this host, whether the process o is alive, proven
// dead or unknown, and says why. Anything short of proof is Unknown.
func Judge(o Owner) (Liveness, string) {
	me, err := Self()
	if err != nil {
		return Unknown, err.Error()
	}
	return JudgeFrom(me, o)
}

// JudgeFrom is Judge with the calling process's identity given: me must
// be this process's identity (Self), or a stand-in for it in tests.
func JudgeFrom(me, o Owner) (Liveness, string) {
	if o.MachineID != me.MachineID {
		return Unknown, fmt.Sprintf("the owner ran on another machine (machine id %s, this is %s)", Short(o.MachineID), Short(me.MachineID))
	}
	if o.BootID != me.BootID {
		return Dead, fmt.Sprintf("the owner's boot %s has ended (this machine has booted again: %s)", Short(o.BootID), Short(me.BootID))
	}
	if o.PIDNamespace != me.PIDNamespace {
		return Unknown, fmt.Sprintf("the owner ran in pid namespace %s, not this one (%s)", o.PIDNamespace, me.PIDNamespace)
	}
	exists, err := pidExists(o.PID)
	if err != nil {
		return Unknown, fmt.Sprintf("cannot tell whether pid %d exists: %v", o.PID, err)
	}
	if !exists {
		return Dead, fmt.Sprintf("no process has pid %d", o.PID)
	}
	info, err := ReadProc(o.PID)
	if errors.Is(err, ErrNoProcess) {
		// Gone between the two looks, or hidden from us: ask once more.
		if exists, err2 := pidExists(o.PID); err2 == nil && !exists {
			return Dead, fmt.Sprintf("no process has pid %d", o.PID)
		}
		return Unknown, fmt.Sprintf("pid %d exists but /proc/%d/stat cannot be read", o.PID, o.PID)
	}
	if err != nil {
		return Unknown, fmt.Sprintf("cannot read the start time of pid %d: %v", o.PID, err)
	}
	if info.StartTime != o.StartTime {
		return Dead, fmt.Sprintf("pid %d now belongs to another process (start time %d, the owner's was %d)", o.PID, info.StartTime, o.StartTime)
	}
	if info.State == 'Z' || info.State == 'X' {
		return Dead, fmt.Sprintf("process %d has exited (zombie, not yet reaped)", o.PID)
	}
	return Alive, fmt.Sprintf("process %d is still running", o.PID)
}
