package admission

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// childEnv selects what the test binary does when re-run as a helper
// process.
const childEnv = "MAJLIS_ADMISSION_TEST_CHILD"

func TestMain(m *testing.M) {
	fixtures.RunHelper(childEnv, func(mode string) int {
		if m, ok := isRacer(mode); ok {
			return runRacer(m)
		}
		return runChild(mode)
	})
	fixtures.Main(m)
}

// childResult is what an acquiring helper prints.
type childResult struct {
	OK   bool   `json:"ok"`
	Code string `json:"code,omitempty"`
	Err  string `json:"err,omitempty"`
}

func errCode(err error) string {
	for _, s := range []struct {
		err  error
		code string
	}{{ErrHeld, "held"}, {ErrQuarantined, "quarantined"}, {ErrUnsafePath, "unsafe_path"}, {ErrMalformed, "malformed"},
		{ErrRequestConflict, "request_conflict"}, {ErrInvalid, "invalid"}, {ErrTokenRequired, "token_required"}} {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return "other"
}

// runChild runs a helper mode:
//   - sleep: print "ready" and block until stdin closes (a live owner).
//   - acquire: acquire MAJLIS_RESOURCES (comma-separated) for
//     MAJLIS_HOLDER in MAJLIS_CHECKOUT, print a childResult. With
//     MAJLIS_CRASH_AT set, the process kills itself (SIGKILL) at that
//     failpoint; MAJLIS_NOW (RFC 3339) fixes its clock.
func runChild(mode string) int {
	switch mode {
	case "sleep":
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return 0
	case "acquire":
		if at := os.Getenv("MAJLIS_CRASH_AT"); at != "" {
			stepHook = func(name string) {
				if name == at {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
			}
		}
		ctx := context.Background()
		opts := Options{HostLedger: os.Getenv("MAJLIS_HOST")}
		if now, err := time.Parse(time.RFC3339Nano, os.Getenv("MAJLIS_NOW")); err == nil {
			opts.Now = func() time.Time { return now }
		}
		s, err := Open(ctx, os.Getenv("MAJLIS_STATE"), opts)
		if err != nil {
			fmt.Printf(`{"err":%q}`+"\n", err.Error())
			return 1
		}
		defer s.Close()
		if os.Getenv("MAJLIS_RELEASE") != "" {
			// Release the holder's leases without a token.
			_, err = s.Release(ctx, ReleaseRequest{Holder: os.Getenv("MAJLIS_HOLDER")})
		} else {
			_, err = s.Acquire(ctx, AcquireRequest{Token: tokenOf(os.Getenv("MAJLIS_HOLDER")), Holder: os.Getenv("MAJLIS_HOLDER"), Checkout: os.Getenv("MAJLIS_CHECKOUT"),
				Resources: strings.Split(os.Getenv("MAJLIS_RESOURCES"), ","), RequestID: os.Getenv("MAJLIS_REQUEST")})
		}
		r := childResult{OK: err == nil}
		if err != nil {
			r.Code, r.Err = errCode(err), err.Error()
		}
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return 0
	}
	return 2
}

// startChild re-runs the test binary in helper mode; Cleanup kills it.
func startChild(t *testing.T, mode string, env ...string) *fixtures.Helper {
	t.Helper()
	return fixtures.StartHelper(t, childEnv, mode, fixtures.HelperOptions{Env: env})
}

// startSleeper starts a helper process that runs until killed, and waits
// until it runs. Its Kill reaps it: afterwards its pid is free, and its
// owner identity proven dead.
func startSleeper(t *testing.T) *fixtures.Helper {
	t.Helper()
	c := fixtures.StartHelper(t, childEnv, "sleep", fixtures.HelperOptions{Lines: true})
	c.Expect("ready")
	return c
}

// result waits for an acquiring helper and decodes what it printed (a
// helper killed at a failpoint prints nothing).
func result(c *fixtures.Helper) (childResult, *os.ProcessState) {
	var r childResult
	st := c.Result(&r, true)
	return r, st
}

// A clock is a fake time source for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a registered repository with a linked worktree, an admission
// service on a fake clock, and a private host ledger.
type env struct {
	t      *testing.T
	main   *fixtures.Repo
	linked *fixtures.Repo
	state  string
	host   string
	clock  *clock
	s      *Service
}

func newEnv(t *testing.T) *env {
	t.Helper()
	main := fixtures.NewRepo(t)
	linked := main.NewWorktree("wt")
	state := filepath.Join(main.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, main: main, linked: linked, state: state, host: filepath.Join(fixtures.TempDir(t), "host.db"), clock: newClock()}
	e.s = e.open()
	return e
}

func (e *env) open() *Service {
	e.t.Helper()
	s, err := Open(context.Background(), e.state, Options{HostLedger: e.host, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// acquire asks for resources in the main checkout (or dir).
func (e *env) acquire(holder, dir string, resources ...string) (*AcquireResult, error) {
	if dir == "" {
		dir = e.main.Dir
	}
	return e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf(holder), Holder: holder, Checkout: dir, Resources: resources})
}

func (e *env) mustAcquire(holder, dir string, resources ...string) *AcquireResult {
	e.t.Helper()
	res, err := e.acquire(holder, dir, resources...)
	if err != nil {
		e.t.Fatalf("acquire %v for %s: %v", resources, holder, err)
	}
	return res
}

func (e *env) list(all bool) []Lease {
	e.t.Helper()
	ls, err := e.s.List(context.Background(), ListRequest{All: all})
	if err != nil {
		e.t.Fatal(err)
	}
	return ls
}

func (e *env) lease(id string) Lease {
	e.t.Helper()
	for _, l := range e.list(true) {
		if l.ID == id {
			return l
		}
	}
	e.t.Fatalf("no lease %s", id)
	return Lease{}
}

// wantErr fails unless err wraps want.
func wantErr(t *testing.T, err, want error) *Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
	var ae *Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *Error", err)
	}
	return ae
}

// testToken is the lease token the tests' clients present, as one client
// would: every lease they acquire, renew or release carries it. The tests
// of lease tokens themselves (token_test.go) use others, and none.
const testToken = "test-lease-token-0123456789abcdef"

// tokenOf is the lease token of holder's client: each task has its own
// (a token guards one holder's leases).
func tokenOf(holder string) string { return testToken + "-" + holder }
