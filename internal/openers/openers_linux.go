package openers

import (
	"os"
	"strconv"
	"strings"
)

// scanAll reads every process of /proc but the caller and its
// descendants. A process that ends during the scan, or whose links
// cannot be read (another user's), is skipped.
func scanAll() ([]proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	parent, command := map[int]int{}, map[int]string{}
	var procs []proc
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		name, ppid, ok := readStat(pid)
		if !ok {
			continue
		}
		parent[pid], command[pid] = ppid, name
		if pid == self {
			continue
		}
		p := proc{pid: pid, command: name}
		base := "/proc/" + n + "/"
		for _, l := range []struct{ name, use string }{{"cwd", UseCwd}, {"root", UseRoot}, {"exe", UseExe}} {
			if target, err := os.Readlink(base + l.name); err == nil && strings.HasPrefix(target, "/") {
				if l.use == UseRoot && target == "/" {
					continue
				}
				p.uses = append(p.uses, use{l.use, cleanTarget(target)})
			}
		}
		if fds, err := os.ReadDir(base + "fd"); err == nil {
			for _, fd := range fds {
				if target, err := os.Readlink(base + "fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "/") {
					p.uses = append(p.uses, use{UseFile, cleanTarget(target)})
				}
			}
		}
		p.uses = append(p.uses, mapped(base+"maps")...)
		if len(p.uses) > 0 {
			procs = append(procs, p)
		}
	}
	// Leave out the git processes the caller runs, with whatever they
	// start (hooks): walk each one's parents up to the caller.
	out := procs[:0]
	for _, p := range procs {
		if !runByCaller(p.pid, self, parent, command) {
			out = append(out, p)
		}
	}
	return out, nil
}

// runByCaller reports whether pid is a git process of the caller, or
// runs under one: a descendant of the caller with a git process on the
// way. A loop or a missing link ends the walk (not the caller's). Other
// descendants (an agent a Go program started, and its dev server) are
// not the caller's own work, and are named.
func runByCaller(pid, self int, parent map[int]int, command map[int]string) bool {
	viaGit := false
	for i := 0; i < 64; i++ {
		viaGit = viaGit || command[pid] == "git"
		pp, ok := parent[pid]
		if !ok || pp <= 0 {
			return false
		}
		if pp == self {
			return viaGit
		}
		pid = pp
	}
	return false
}

// cleanTarget strips what the kernel appends to the link of a deleted
// file.
// mapped returns the files a process has mapped into its memory, from
// its maps file (one line a mapping; the path, when there is one, is the
// rest of the line from its first '/'), each once.
func mapped(maps string) []use {
	b, err := os.ReadFile(maps)
	if err != nil {
		return nil
	}
	var out []use
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		if path := cleanTarget(line[i:]); !seen[path] {
			seen[path] = true
			out = append(out, use{UseMap, path})
		}
	}
	return out
}

func cleanTarget(t string) string {
	return strings.TrimSuffix(t, " (deleted)")
}

// readStat reads a process's command name and parent pid from
// /proc/<pid>/stat (the name may hold spaces and parentheses: the fields
// are counted after its last ')').
func readStat(pid int) (command string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	return parseStat(b)
}

// supported: Linux's /proc lists every process's open files.
const supported = true
