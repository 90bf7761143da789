package reservation

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// Child processes: the test binary re-runs itself with childEnv naming a
// mode; TestMain dispatches to it before any test runs.
const childEnv = "MAJLIS_RESERVATION_TEST_CHILD"

func TestMain(m *testing.M) {
	fixtures.RunHelper(childEnv, runChild)
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

// startChild runs the test binary in the given mode with extra environment
// (KEY=VALUE) and optional inherited files (fd 3 onwards): a helper
// speaking JSON lines on stdout and reading commands on stdin.
func startChild(t testing.TB, mode string, env []string, files ...*os.File) *fixtures.Helper {
	t.Helper()
	return fixtures.StartHelper(t, childEnv, mode, fixtures.HelperOptions{Env: env, Files: files, Lines: true})
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
