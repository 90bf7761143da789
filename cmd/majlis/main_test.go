package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(isolated{m}, map[string]func(){
		"majlis": func() { os.Exit(int(Main())) },
	})
}

// isolated runs the tests isolated from the user's Git and majlis setup
// (fixtures.Isolate). The majlis commands of the scripts are this binary
// too, but they must keep the environment their script gives them (its
// HOME, its host ledger), so isolation applies to the tests only: after
// testscript.Main has dispatched commands, before the tests run.
type isolated struct{ m *testing.M }

func (i isolated) Run() int {
	home, err := fixtures.Isolate()
	if err != nil {
		panic(err)
	}
	code := i.m.Run()
	if os.Getenv("MAJLIS_KEEP_TEST_HOME") == "" {
		os.RemoveAll(home)
	}
	return code
}

// TestScripts runs testdata/script/*.txtar against the real command line.
// Extra commands:
//
//	exits N PROG ARGS...              run PROG and require exit status N
//	poll TIMEOUT REGEXP PROG ARGS...  run PROG until its stdout matches
//	                                  REGEXP, failing after TIMEOUT
//	grab VAR REGEXP                   set $VAR to the first group of
//	                                  REGEXP in the last stdout (an id)
//	spawn VAR [DIR]                   start a process that waits until
//	                                  the script ends (in DIR); $VAR is
//	                                  its pid
//	reap VAR                          kill the process $VAR and wait for
//	                                  it: proven dead, no zombie left
//
// The host ledger of admission (machine-wide leases) is $WORK/host.db:
// scripts never touch the real ~/.local/state, and the repositories of one
// script share it, as the repositories of one machine do.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			e.Setenv("HOME", home)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
			e.Setenv("MAJLIS_HOST_LEDGER", filepath.Join(e.WorkDir, "host.db"))
			e.Defer(func() { killScriptServers(e.WorkDir) })
			// Each task's lease token is kept in a file of its own, as
			// the README's tour keeps them; lease_tokens.txtar unsets it
			// to see tokens generated.
			e.Setenv(TokenDirEnv, filepath.Join(e.WorkDir, "tokens"))
			e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			e.Setenv("MAJLIS_BACKGROUND_PURGE", "0")
			e.Setenv("GIT_TERMINAL_PROMPT", "0")
			e.Setenv("LC_ALL", "C")
			e.Setenv("TZ", "UTC")
			// A binary built with -race sleeps a second at exit, waiting
			// for racing goroutines to report; the commands of a script
			// are such binaries under 'make test', hundreds of them. A
			// race they detect still fails the command (exit 66).
			e.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			gitconfig := "[user]\n\tname = majlis test\n\temail = test@majlis.invalid\n[init]\n\tdefaultBranch = main\n" +
				"[commit]\n\tgpgsign = false\n[core]\n\tautocrlf = false\n"
			return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"poll":      cmdPoll,
			"grab":      cmdGrab,
			"freeports": cmdFreePorts,
			"listen":    cmdListen,
			"golden":    cmdGolden,
			"spawn":     cmdSpawn,
			"reap":      cmdReap,
			"fits":      cmdFits,
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N PROG ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdFits fails when a line of the last command's stdout or stderr is
// wider than N columns.
func cmdFits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fits N")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 1 {
		ts.Fatalf("fits: bad width %q", args[0])
	}
	for _, name := range []string{"stdout", "stderr"} {
		for _, line := range strings.Split(ts.ReadFile(name), "\n") {
			if w := utf8.RuneCountInString(line); w > n {
				ts.Fatalf("%s has a line of %d columns (more than %d): %q", name, w, n, line)
			}
		}
	}
}

// cmdPoll waits for a condition with a deadline instead of sleeping a
// fixed time: it runs PROG (whatever its exit status) until its stdout
// matches REGEXP, then leaves that run's output for the next assertions.
func cmdPoll(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: poll TIMEOUT REGEXP PROG ARGS...")
	}
	timeout, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("poll: bad timeout %q", args[0])
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("poll: %v", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		ts.Exec(args[2], args[3:]...)
		if re.MatchString(ts.ReadFile("stdout")) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("poll: %s did not print a match for %q within %v; last output:\n%s", args[2], args[1], timeout, ts.ReadFile("stdout"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grab VAR REGEXP")
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		ts.Fatalf("grab: %v", err)
	}
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("grab: no match for %q (with a group) in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// cmdFreePorts finds N consecutive ports, from 40000 up, that nothing
// listens on (on 127.0.0.1 or ::1), and sets VAR to the first and VAR_1 ...
// VAR_N to each: scripts give them to port_range, so that what they assert
// does not depend on what else runs on the machine.
func cmdFreePorts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: freeports VAR N")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 1 {
		ts.Fatalf("freeports: bad count %q", args[1])
	}
	lo, ok := findFreePorts(n)
	if !ok {
		ts.Fatalf("freeports: no %d consecutive free ports", n)
	}
	ts.Setenv(args[0], strconv.Itoa(lo))
	for i := range n {
		ts.Setenv(fmt.Sprintf("%s_%d", args[0], i+1), strconv.Itoa(lo+i))
	}
}

// cmdListen listens on 127.0.0.1:PORT until the script ends: a program
// that majlis does not know about.
func cmdListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: listen PORT")
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", args[0]))
	if err != nil {
		ts.Fatalf("listen: %v", err)
	}
	ts.Defer(func() { l.Close() })
}

// scriptProcs are the processes spawn started, by pid; scripts run in
// parallel.
var (
	scriptProcsMu sync.Mutex
	scriptProcs   = map[string]*exec.Cmd{}
)

func takeProc(pid string) *exec.Cmd {
	scriptProcsMu.Lock()
	defer scriptProcsMu.Unlock()
	cmd := scriptProcs[pid]
	delete(scriptProcs, pid)
	return cmd
}

// cmdSpawn starts a process (an owner for --owner-pid) that lives until
// the script ends or reap kills it; with DIR, it works in that folder (a
// dev server in a workspace).
func cmdSpawn(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: spawn VAR [DIR]")
	}
	cmd := exec.Command("sleep", "3600")
	if len(args) == 2 {
		cmd.Dir = ts.MkAbs(args[1])
	}
	if err := cmd.Start(); err != nil {
		ts.Fatalf("spawn: %v", err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	scriptProcsMu.Lock()
	scriptProcs[pid] = cmd
	scriptProcsMu.Unlock()
	ts.Defer(func() {
		if c := takeProc(pid); c != nil {
			c.Process.Kill()
			c.Wait()
		}
	})
	ts.Setenv(args[0], pid)
}

// cmdReap kills a spawned process and waits for it, so that it is gone
// from the process table when the next command looks.
func cmdReap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: reap VAR")
	}
	pid := ts.Getenv(args[0])
	cmd := takeProc(pid)
	if cmd == nil {
		ts.Fatalf("reap: no spawned process %q", pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
}
