// Package openers finds the processes that use a folder: those whose
// working directory, root, executable, an open file or a file mapped in
// memory lies inside it. A
// process that outlived the agent that started it (a dev server, a
// watcher, a shell someone left there) still writes in its workspace, and
// a dead owner proves nothing about it; reclaim shows these processes and
// a bulk reclaim leaves their workspaces alone.
//
// It reads Linux's /proc once for every process: a process of another
// user whose links cannot be read is not seen (only root sees them all).
// On other systems Scan fails, so that callers that
// must know refuse rather than assume no process is there.
package openers

import (
	"bytes"
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/majlis-dev/majlis/wire"
)

// errUnsupported: the system gives no way to list processes' open files.
var errUnsupported = errors.New("openers: listing the processes that use a folder is supported on Linux only")

// A Process is one process that uses a folder, with the first way it was
// found to use it (wire.Process: list and the reclaim preview show it).
type Process = wire.Process

// Uses of a folder, in the order a process is described by.
const (
	UseCwd  = "cwd"
	UseRoot = "root"
	UseExe  = "exe"
	UseFile = "file"
	// UseMap: a file inside is mapped into the process's memory (mmap),
	// which lets it write the file with no descriptor open.
	UseMap = "map"
)

// Supported reports whether Scan can list the processes on this system.
func Supported() bool { return supported }

// Scan returns, for each of dirs (physical paths: symbolic links
// resolved, as the kernel reports paths) that some process uses, those
// processes in pid order. A path inside two of dirs (a folder inside
// another) counts for both. The calling process and the git processes it
// runs (with what they start) are left out: they are the caller's own
// work. Its other descendants are not (an agent a Go program started
// leaves its dev server behind like any other).
func Scan(dirs []string) (map[string][]Process, error) {
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		if d != "" {
			want[filepath.Clean(d)] = true
		}
	}
	out := map[string][]Process{}
	if len(want) == 0 {
		return out, nil
	}
	procs, err := scanAll()
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		seen := map[string]bool{}
		for _, u := range p.uses {
			for d := u.path; ; {
				if want[d] && !seen[d] {
					seen[d] = true
					out[d] = append(out[d], Process{PID: p.pid, Command: p.command, Use: u.use, Path: u.path})
				}
				parent := filepath.Dir(d)
				if parent == d {
					break
				}
				d = parent
			}
		}
	}
	for d := range out {
		sort.SliceStable(out[d], func(i, j int) bool { return out[d][i].PID < out[d][j].PID })
	}
	return out, nil
}

// A use is one path a process holds.
type use struct{ use, path string }

// A proc is what the scan read of one process.
type proc struct {
	pid     int
	command string
	uses    []use // cwd, root, exe first, then the open files, then the mapped ones
}

// parseStat reads a process's command name and parent pid from the text
// of /proc/<pid>/stat.
func parseStat(b []byte) (command string, ppid int, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(string(b[end+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	return string(b[open+1 : end]), ppid, true
}
