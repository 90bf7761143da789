package openers

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// orphan starts script in dir as a process that is not the test's
// descendant (its shell exits at once), as an agent's dev server outlives
// its agent, and returns its pid; it is killed when the test ends.
func orphan(t *testing.T, dir, script string) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", `cd "$1" && { `+script+` ; } </dev/null >/dev/null 2>&1 & echo $!`, "sh", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// scanUntil scans until found says yes, with a deadline (the started
// process needs a moment to open what it opens).
func scanUntil(t *testing.T, dirs []string, found func(map[string][]Process) bool) map[string][]Process {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := Scan(dirs)
		if err != nil {
			t.Fatal(err)
		}
		if found(got) || time.Now().After(deadline) {
			return got
		}
		runtime.Gosched()
	}
}

func has(ps []Process, pid int, use string) bool {
	for _, p := range ps {
		if p.PID == pid && p.Use == use {
			return true
		}
	}
	return false
}

func TestScan(t *testing.T) {
	if runtime.GOOS != "linux" {
		if _, err := Scan([]string{t.TempDir()}); err != errUnsupported {
			t.Fatalf("Scan off Linux: %v, want errUnsupported", err)
		}
		return
	}
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, other, inner := filepath.Join(root, "ws"), filepath.Join(root, "other"), filepath.Join(root, "ws", "sub")
	for _, d := range []string{inner, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(inner, "log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	server := orphan(t, inner, "exec sleep 1000")                        // its working directory inside
	writer := orphan(t, other, "exec 3>>"+inner+"/log; exec sleep 1000") // an open file inside
	got := scanUntil(t, []string{ws, other, inner, filepath.Join(root, "empty")}, func(m map[string][]Process) bool {
		return has(m[ws], server, UseCwd) && has(m[ws], writer, UseFile)
	})
	if !has(got[ws], server, UseCwd) || !has(got[inner], server, UseCwd) {
		t.Errorf("the process working in %s is not named for it and its parent: %+v", inner, got)
	}
	if !has(got[ws], writer, UseFile) || !has(got[other], writer, UseCwd) {
		t.Errorf("the process with a file open in %s is not named: %+v", inner, got)
	}
	if ps := got[filepath.Join(root, "empty")]; len(ps) != 0 {
		t.Errorf("processes named for a folder none uses: %+v", ps)
	}
	for _, p := range got[ws] {
		if p.PID == os.Getpid() {
			t.Errorf("the calling process is named: %+v", p)
		}
		if p.Command == "" || !strings.HasPrefix(p.Path, ws) {
			t.Errorf("process %+v: want its command and a path inside %s", p, ws)
		}
	}
	// The caller's git processes are its own work: left out. Its other
	// children are named (an agent a Go program started).
	gitChild := exec.Command("git", "hash-object", "--stdin")
	gitChild.Dir = inner
	stdin, err := gitChild.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "1000")
	child.Dir = inner
	for _, c := range []*exec.Cmd{gitChild, child} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { stdin.Close(); child.Process.Kill(); child.Wait(); gitChild.Wait() }()
	got = scanUntil(t, []string{inner}, func(m map[string][]Process) bool { return has(m[inner], child.Process.Pid, UseCwd) })
	if !has(got[inner], child.Process.Pid, UseCwd) {
		t.Errorf("the caller's child (not git) is not named: %+v", got)
	}
	if has(got[inner], gitChild.Process.Pid, UseCwd) {
		t.Errorf("the caller's git process is named: %+v", got)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("12 (sh) S 1 12 12 0 -1"))
	f.Add([]byte("12 (a) b) (c) R 7 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b)
	})
}

func TestParseStat(t *testing.T) {
	for in, want := range map[string]struct {
		cmd  string
		ppid int
		ok   bool
	}{
		"12 (sh) S 1 12 12":         {"sh", 1, true},
		"12 (a) b) (c) R 7 1":       {"a) b) (c", 7, true},
		"12 (x":                     {},
		"12 (x) S notanumber 3 4 5": {},
	} {
		cmd, ppid, ok := parseStat([]byte(in))
		if cmd != want.cmd || ppid != want.ppid || ok != want.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %+v", in, cmd, ppid, ok, want)
		}
	}
}

// BenchmarkScan times one scan of every process's links, as workspace
// list makes, beside its floor (bare): listing /proc and reading each
// process's stat, which any look at the processes costs.
func BenchmarkScan(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("Linux only")
	}
	dir := b.TempDir()
	var ours, floor time.Duration
	for b.Loop() {
		t0 := time.Now()
		names, _ := os.ReadDir("/proc")
		for _, n := range names {
			if pid, err := strconv.Atoi(n.Name()); err == nil {
				readStat(pid)
			}
		}
		t1 := time.Now()
		if _, err := Scan([]string{dir}); err != nil {
			b.Fatal(err)
		}
		ours, floor = ours+time.Since(t1), floor+t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours)/n, "majlis-ns/op")
	b.ReportMetric(float64(floor)/n, "bare-ns/op")
	b.ReportMetric(float64(ours)/float64(floor), "x-bare")
}

// TestScanMapped: a process that mapped a file inside and closed it
// (it can still write it through the mapping) is named, use "map".
func TestScanMapped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if path := os.Getenv("OPENERS_MAP_HELPER"); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := syscall.Mmap(int(f.Fd()), 0, 4, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("mapped\n")
		var b [1]byte
		os.Stdin.Read(b[:]) // until the test closes it
		m[0] = b[0]
		return
	}
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestScanMapped$")
	helper.Env = append(os.Environ(), "OPENERS_MAP_HELPER="+file)
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); helper.Process.Kill(); helper.Wait() }()
	var b [7]byte
	if _, err := io.ReadFull(out, b[:]); err != nil || string(b[:]) != "mapped\n" {
		t.Fatalf("helper: %q, %v", b, err)
	}
	got, err := Scan([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if !has(got[dir], helper.Process.Pid, UseMap) {
		t.Errorf("the process with %s mapped is not named: %+v", file, got)
	}
}
