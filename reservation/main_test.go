package reservation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// Child processes: the test binary re-runs itself with childEnv naming a
// mode; TestMain dispatches to it before any test runs.
const childEnv = "MAJLIS_RESERVATION_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	fixtures.Main(m)
}

func openTestDir(t testing.TB) *Dir {
	t.Helper()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// A child is a helper process speaking JSON lines on stdout and reading
// commands on stdin.
type child struct {
	t     testing.TB
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	once  sync.Once
}

// startChild runs the test binary in the given mode with extra environment
// (KEY=VALUE) and optional inherited files (fd 3 onwards).
func startChild(t testing.TB, mode string, env []string, files ...*os.File) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	cmd.ExtraFiles = files
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	c.out.Buffer(make([]byte, 1<<16), 1<<20)
	t.Cleanup(c.kill)
	return c
}

func (c *child) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("child %d: send %q: %v", c.cmd.Process.Pid, line, err)
	}
}

// recv reads one JSON line into v, failing the test after a deadline.
func (c *child) recv(v any) {
	c.t.Helper()
	type result struct {
		line string
		ok   bool
	}
	ch := make(chan result, 1)
	go func() { ok := c.out.Scan(); ch <- result{c.out.Text(), ok} }()
	select {
	case r := <-ch:
		if !r.ok {
			c.t.Fatalf("child %d exited without answering (%v)", c.cmd.Process.Pid, c.out.Err())
		}
		if err := json.Unmarshal([]byte(r.line), v); err != nil {
			c.t.Fatalf("child %d: bad line %q: %v", c.cmd.Process.Pid, r.line, err)
		}
	case <-time.After(60 * time.Second):
		c.t.Fatalf("child %d: no answer within 60s", c.cmd.Process.Pid)
	}
}

// kill SIGKILLs the child and reaps it.
func (c *child) kill() {
	c.once.Do(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
}

// childReply is what children print.
type childReply struct {
	OK        bool    `json:"ok"`
	Err       string  `json:"err,omitempty"`
	Sentinel  string  `json:"sentinel,omitempty"`
	Record    *Record `json:"record,omitempty"`
	Holder    *Record `json:"holder,omitempty"`
	PID       int     `json:"pid,omitempty"`
	Count     int     `json:"count,omitempty"`
	Grandkid  int     `json:"grandchild,omitempty"`
	Stepped   string  `json:"stepped,omitempty"`
	Remaining string  `json:"remaining,omitempty"`
}

func sentinelName(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{{ErrHeld, "held"}, {ErrMalformed, "malformed"}, {ErrNotOwner, "not_owner"}, {ErrOwnerAlive, "owner_alive"},
		{ErrOwnerUnknown, "owner_unknown"}, {ErrNotExpired, "not_expired"}, {ErrNotFound, "not_found"},
		{ErrChanged, "changed"}, {ErrInvalid, "invalid"}} {
		if isErr(err, s.err) {
			return s.name
		}
	}
	if err != nil {
		return "other"
	}
	return ""
}

func replyErr(err error) childReply {
	r := childReply{OK: err == nil, Sentinel: sentinelName(err)}
	if err != nil {
		r.Err = err.Error()
		if e, ok := asError(err); ok {
			r.Holder = e.Holder
		}
	}
	return r
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func envDur(key string, def time.Duration) time.Duration {
	if v := os.Getenv(key); v != "" {
		d, err := time.ParseDuration(v)
		if err == nil {
			return d
		}
	}
	return def
}

func readLines() <-chan string {
	ch := make(chan string)
	go func() {
		s := bufio.NewScanner(os.Stdin)
		for s.Scan() {
			ch <- strings.TrimSpace(s.Text())
		}
		close(ch)
	}()
	return ch
}
