package procid

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// readSelf establishes the identity of the calling process.
func readSelf() (Owner, error) {
	var o Owner
	var err error
	if o.Hostname, err = os.Hostname(); err != nil {
		return o, fmt.Errorf("hostname: %w", err)
	}
	if o.MachineID, err = readMachineID(); err != nil {
		return o, err
	}
	boot := "/proc/sys/kernel/random/boot_id"
	if source.BootIDFile != "" {
		boot = source.BootIDFile
	}
	if o.BootID, err = readTrimmed(boot); err != nil {
		return o, err
	}
	if o.PIDNamespace, err = os.Readlink("/proc/self/ns/pid"); err != nil {
		return o, fmt.Errorf("pid namespace: %w", err)
	}
	o.PID = os.Getpid()
	info, err := ReadProc(o.PID)
	if err != nil {
		return o, err
	}
	o.StartTime = info.StartTime
	return o, nil
}

func readMachineID() (string, error) {
	if source.MachineIDFile != "" {
		id, err := readTrimmed(source.MachineIDFile)
		if err == nil && id == "" {
			err = fmt.Errorf("machine id file %s is empty", source.MachineIDFile)
		}
		return id, err
	}
	var firstErr error
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		id, err := readTrimmed(p)
		if err == nil && id != "" {
			return id, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return "", fmt.Errorf("no machine id in /etc/machine-id or /var/lib/dbus/machine-id (%v); create one with systemd-machine-id-setup or dbus-uuidgen --ensure", firstErr)
}

func readTrimmed(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Info is what /proc/<pid>/stat says about a process.
type Info struct {
	State     byte   // R, S, D, Z, X, ...
	StartTime uint64 // clock ticks after boot
	PPID      int    // parent process id
}

// ErrNoProcess means the kernel says no process has the pid.
var ErrNoProcess = wire.Sentinel("internal", "no such process")

// ReadProc reads /proc/<pid>/stat. The command name (field 2) may contain
// spaces and parentheses, so fields are counted after its last ')'.
func ReadProc(pid int) (Info, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Info{}, ErrNoProcess
		}
		return Info{}, err
	}
	return parseStat(pid, b)
}

// parseStat decodes the contents of /proc/<pid>/stat.
func parseStat(pid int, b []byte) (Info, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Info{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 || len(f[0]) != 1 {
		return Info{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: start time: %v", pid, err)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return Info{}, fmt.Errorf("/proc/%d/stat: parent pid: %v", pid, err)
	}
	return Info{State: f[0][0], StartTime: st, PPID: ppid}, nil
}

// pidExists asks the kernel whether any process has pid. It is not fooled
// by a /proc mounted with hidepid: kill(pid, 0) fails with ESRCH only when
// no such process exists.
func pidExists(pid int) (bool, error) {
	err := unix.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return true, nil
	case errors.Is(err, unix.ESRCH):
		return false, nil
	}
	return false, err
}
