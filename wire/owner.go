package wire

import "fmt"

// An Owner identifies a process precisely enough that a reused pid is
// never taken for it. Its JSON form is part of the on-disk records that
// embed it (docs/leases.md) and of the results that show a lease's
// forcing process or a server's leaseholder.
type Owner struct {
	Hostname     string `json:"hostname"`
	MachineID    string `json:"machine_id"`    // /etc/machine-id
	BootID       string `json:"boot_id"`       // /proc/sys/kernel/random/boot_id
	PIDNamespace string `json:"pid_namespace"` // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
	PID          int    `json:"pid"`
	StartTime    uint64 `json:"start_time"` // field 22 of /proc/<pid>/stat: clock ticks after boot
}

// Describe renders o for error messages.
func (o Owner) Describe() string {
	return fmt.Sprintf("pid %d on %s (machine %s, boot %s, %s, start time %d)",
		o.PID, o.Hostname, shortID(o.MachineID), shortID(o.BootID), o.PIDNamespace, o.StartTime)
}

// shortID abbreviates a machine or boot id.
func shortID(id string) string { return id[:min(len(id), 12)] }
