// Package admissiontest is the conformance suite of admission backends:
// the behaviour every admission.Backend must show, whatever keeps its
// leases. It runs against real Git repositories (package fixtures), real
// processes (owner liveness) and a fake clock the backend must use.
//
//	func TestConformance(t *testing.T) {
//		admissiontest.Run(t, func(t *testing.T, stateDir string, now func() time.Time) admission.Backend {
//			...open the backend for the repository whose state dir is stateDir...
//		})
//	}
//
// The SQLite ledgers (admission.Open) run it in package admission.
package admissiontest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// A Factory opens a backend for the registered repository whose state dir
// (<git-common-dir>/majlis) is stateDir, judging time by now. Opened
// again with the same state dir within one test, it must see the same
// leases. The suite closes what it opens.
type Factory func(t *testing.T, stateDir string, now func() time.Time) admission.Backend

// Run runs the conformance suite against the backends open makes, each
// test in a repository of its own.
func Run(t *testing.T, open Factory) {
	for _, c := range []struct {
		name string
		f    func(*testing.T, Factory)
	}{
		{"ConflictRules", testConflictRules},
		{"SameHolder", testSameHolder},
		{"DenialIsAllOrNothing", testDenialIsAllOrNothing},
		{"UnsafePathTouchesNoLedger", testUnsafePathTouchesNoLedger},
		{"QuarantineBlocks", testQuarantineBlocks},
		{"QuarantineCannotBeRenewed", testQuarantineCannotBeRenewed},
		{"QuarantineLiftedByRelease", testQuarantineLiftedByRelease},
		{"QuarantineLiftedByResolve", testQuarantineLiftedByResolve},
		{"QuarantineOwnerDead", testQuarantineOwnerDead},
		{"OwnerDeadResolvedOnDenial", testOwnerDeadResolvedOnDenial},
		{"OwnerPIDMustRun", testOwnerPIDMustRun},
		{"LiveLeases", testLiveLeases},
		{"RequestID", testRequestID},
		{"RequestIDNotRecordedOnDenial", testRequestIDNotRecordedOnDenial},
		{"RequestIDRenewReleaseResolve", testRequestIDRenewReleaseResolve},
		{"Generations", testGenerations},
		{"Check", testCheck},
		{"Policy", testPolicy},
		{"PropertyNoConflictingGrants", testPropertyNoConflictingGrants},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each test has a repository and ledgers of its own
			c.f(t, open)
		})
	}
}

// A clock is the fake time source the backend under test is given.
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

// env is a registered repository with a linked worktree and a backend on
// a fake clock.
type env struct {
	t      *testing.T
	main   *fixtures.Repo
	linked *fixtures.Repo
	state  string
	clock  *clock
	s      admission.Backend
}

func newEnv(t *testing.T, open Factory) *env {
	t.Helper()
	main := fixtures.NewRepo(t)
	linked := main.NewWorktree("wt")
	state := filepath.Join(main.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, main: main, linked: linked, state: state, clock: newClock()}
	e.s = open(t, state, e.clock.Now)
	t.Cleanup(func() { e.s.Close() })
	return e
}

// acquire asks for resources in the main checkout (or dir).
func (e *env) acquire(holder, dir string, resources ...string) (*admission.AcquireResult, error) {
	if dir == "" {
		dir = e.main.Dir
	}
	return e.s.Acquire(context.Background(), admission.AcquireRequest{Token: tokenOf(holder), Holder: holder, Checkout: dir, Resources: resources})
}

func (e *env) mustAcquire(holder, dir string, resources ...string) *admission.AcquireResult {
	e.t.Helper()
	res, err := e.acquire(holder, dir, resources...)
	if err != nil {
		e.t.Fatalf("acquire %v for %s: %v", resources, holder, err)
	}
	return res
}

func (e *env) list(all bool) []admission.Lease {
	e.t.Helper()
	ls, err := e.s.List(context.Background(), admission.ListRequest{All: all})
	if err != nil {
		e.t.Fatal(err)
	}
	return ls
}

func (e *env) lease(id string) admission.Lease {
	e.t.Helper()
	for _, l := range e.list(true) {
		if l.ID == id {
			return l
		}
	}
	e.t.Fatalf("no lease %s", id)
	return admission.Lease{}
}

// wantErr fails unless err wraps want and is an *admission.Error.
func wantErr(t *testing.T, err, want error) *admission.Error {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
	var ae *admission.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v is not an *admission.Error", err)
	}
	return ae
}

// testToken is the lease token the suite's clients present.
const testToken = "test-lease-token-0123456789abcdef"

// tokenOf is the lease token of holder's client: each task has its own
// (a token guards one holder's leases).
func tokenOf(holder string) string { return testToken + "-" + holder }

// A sleeper is a process that runs until killed: a lease owner.
type sleeper struct{ cmd *exec.Cmd }

// startSleeper starts a process that runs until killed.
func startSleeper(t *testing.T) *sleeper {
	t.Helper()
	c := &sleeper{cmd: exec.Command("sleep", "3600")}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	return c
}

// kill kills the process with SIGKILL and reaps it: afterwards its pid is
// free, and its owner identity proven dead.
func (c *sleeper) kill(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}
