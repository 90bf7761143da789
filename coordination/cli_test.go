package coordination_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A host is one clone of the repository with a host ledger of its own,
// driven through the real command line (the failpoints build).
type host struct {
	t    *testing.T
	bin  string
	repo *fixtures.Repo
	env  []string
}

// A run is one finished command.
type run struct {
	args           []string
	exit           int
	killed         bool
	stdout, stderr string
}

func (r run) String() string {
	return "majlis " + strings.Join(r.args, " ") + ": exit " + strconv.Itoa(r.exit) + "\nstdout: " + r.stdout + "\nstderr: " + r.stderr
}

// newHost makes a clone registered with majlis whose shared leases go to
// endpoint under repository key. ids, when given, are the host's machine
// id and boot id (else this machine's): one machine acts as several hosts.
func newHost(t *testing.T, endpoint, key string, ids ...string) *host {
	t.Helper()
	h := &host{t: t, bin: fixtures.FailpointsBinary(t), repo: fixtures.NewRepo(t),
		env: []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db"),
			"MAJLIS_TOKEN_DIR=" + t.TempDir(), "MAJLIS_ETCD_ENDPOINTS=" + endpoint}}
	for i, name := range []string{envvar.MachineIDFile, envvar.BootIDFile}[:len(ids)] {
		f := filepath.Join(t.TempDir(), "id")
		if err := os.WriteFile(f, []byte(ids[i]+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h.env = append(h.env, name+"="+f)
	}
	h.ok("init")
	h.ok("policy", "set", admission.PolicyRepositoryKey, key)
	return h
}

func (h *host) run(env []string, args ...string) run {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.repo.Dir
	cmd.Env = append(append(os.Environ(), h.env...), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := run{args: args, exit: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		r.killed = true
	} else if err != nil && !errors.As(err, new(*exec.ExitError)) {
		h.t.Fatalf("majlis %v: %v", args, err)
	}
	return r
}

func (h *host) ok(args ...string) run {
	h.t.Helper()
	r := h.run(nil, args...)
	if r.exit != 0 {
		h.t.Fatalf("%s", r)
	}
	return r
}

// acquire runs `lease acquire --json` for holder.
func (h *host) acquire(holder string, extra ...string) run {
	h.t.Helper()
	return h.run(nil, append([]string{"lease", "acquire", "--json", "--holder", holder}, extra...)...)
}

// result decodes the JSON of a run: leases, warnings, error code.
func (r run) result(t *testing.T) (leases []admission.Lease, warnings []admission.Warning, code string) {
	t.Helper()
	var out struct {
		Leases   []admission.Lease   `json:"leases"`
		Warnings []admission.Warning `json:"warnings"`
		Error    *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("not JSON (%v): %s", err, r)
	}
	if out.Error != nil {
		code = out.Error.Code
	}
	return out.Leases, out.Warnings, code
}

// wantRefused fails unless r exited with exit and code.
func wantRefused(t *testing.T, r run, exit int, code string) {
	t.Helper()
	if _, _, got := r.result(t); r.exit != exit || got != code {
		t.Fatalf("want exit %d %s, got %s", exit, code, r)
	}
}

// TestTwoHosts: two clones, each with its own host ledger, share intents
// and cluster singletons through etcd, through the real command line.
func TestTwoHosts(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	key := "example.com/two-hosts"
	a, b := newHost(t, srv.Endpoint, key, "m-two-hosts-a"), newHost(t, srv.Endpoint, key, "m-two-hosts-b")

	// A cluster singleton: one holder across both.
	a.ok("lease", "acquire", "--holder", "T-1", "cluster:two-hosts-deploy")
	wantRefused(t, b.acquire("T-1", "cluster:two-hosts-deploy"), 4, "held") // T-1 in another clone is another holder

	// Overlapping intents across clones: warned by default...
	a.ok("lease", "acquire", "--holder", "T-1", "intent:src/**")
	r := b.acquire("T-2", "intent:src/auth/**")
	if _, w, code := r.result(t); r.exit != 0 || code != "" || len(w) != 1 || w[0].Code != "intent_overlap" {
		t.Fatalf("want a grant with an intent_overlap warning: %s", r)
	}
	// ...and refused once the shared policy blocks, whichever clone set it.
	b.ok("policy", "set", admission.PolicyCrossWorktreeOverlap, "block")
	wantRefused(t, a.acquire("T-3", "intent:src/auth/login/**"), 4, "held")
	// Files stay per checkout: the same path in both clones is granted.
	a.ok("lease", "acquire", "--holder", "T-1", "file:src/a.go")
	b.ok("lease", "acquire", "--holder", "T-2", "file:src/a.go")

	// Released, the singleton goes to the other clone.
	a.ok("lease", "release", "--holder", "T-1")
	b.ok("lease", "acquire", "--holder", "T-1", "cluster:two-hosts-deploy")

	// Each registered as a host of its own.
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range []string{"m-two-hosts-a", "m-two-hosts-b"} {
		if r, err := c.Get(t.Context(), "/majlis/hosts/"+m+"/", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 1 {
			t.Errorf("registrations of machine %s: %v %v", m, r, err)
		}
	}
}

// TestSameMachineID: a second host with the machine id of a live one
// (hosts cloned from one image) is refused its shared leases, exit 3
// duplicate_machine_id, through the real command line: its processes
// could not be told from the other's. Its local leases are granted.
func TestSameMachineID(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	key := "example.com/same-machine-id"
	a := newHost(t, srv.Endpoint, key, "m-same-machine-id", "boot-one")
	b := newHost(t, srv.Endpoint, key, "m-same-machine-id", "boot-two")
	a.ok("lease", "acquire", "--holder", "T-1", "cluster:same-machine-id")
	for _, res := range []string{"cluster:same-machine-id-2", "intent:src/**"} {
		wantRefused(t, b.acquire("T-2", res), 3, "duplicate_machine_id")
	}
	b.ok("lease", "acquire", "--holder", "T-2", "file:a.txt")
	a.ok("lease", "acquire", "--holder", "T-1", "intent:src/**") // the first host is not troubled
}

// TestEtcdStopped: with the cluster down, shared leases are refused with
// coordination_unavailable (exit 4), never granted locally instead; file
// leases are still granted.
func TestEtcdStopped(t *testing.T) {
	t.Parallel()
	srv, err := etcdtest.Start("")
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, srv.Endpoint, "example.com/stopped")
	h.ok("lease", "acquire", "--holder", "T-1", "intent:src/**")
	srv.Stop()
	// A bound far below the default's 5 seconds: the test need not wait
	// it out twice.
	bound := []string{envvar.EtcdTimeout + "=300ms"}
	for _, res := range []string{"intent:docs/**", "cluster:stopped-deploy"} {
		r := h.run(bound, "lease", "acquire", "--json", "--holder", "T-2", res)
		wantRefused(t, r, 4, "coordination_unavailable")
		if !strings.Contains(r.stdout, srv.Endpoint) {
			t.Errorf("the refusal does not name the endpoint %s: %s", srv.Endpoint, r)
		}
		if !strings.Contains(r.stdout, "within 300ms") {
			t.Errorf("the refusal does not say its bound: %s", r)
		}
	}
	if r := h.run(bound, "lease", "acquire", "--json", "--holder", "T-2", "file:a.txt", "host:port:7001"); r.exit != 0 {
		t.Fatalf("local leases with the cluster down: %s", r)
	}
}

// TestCrashBetweenPhases: a client killed between the two phases of a
// mixed request (a file lease and an intent) leaves nothing shown as
// granted that was not; the next admission on its machine settles it.
func TestCrashBetweenPhases(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	key := "example.com/crash"
	a, b := newHost(t, srv.Endpoint, key), newHost(t, srv.Endpoint, key)
	crash := func(fp string, res ...string) {
		t.Helper()
		r := a.run([]string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}, append([]string{"lease", "acquire", "--json", "--holder", "T-1"}, res...)...)
		if !r.killed {
			t.Fatalf("not killed at %s: %s", fp, r)
		}
	}

	// Killed after the shared records were written, before the local
	// transaction: nothing is granted, and the next admission that meets
	// the pending records on this machine (here the other clone's: both
	// run on this machine) proves the admitter dead and deletes them.
	crash("admission/shared-pending", "file:a.txt", "intent:docs/**")
	ls, _, _ := a.ok("lease", "list", "--json").result(t)
	if len(ls) != 0 {
		t.Fatalf("after a crash before the local transaction, leases %+v", ls)
	}
	r := b.acquire("T-9", "intent:docs/**")
	if _, w, _ := r.result(t); r.exit != 0 || len(w) != 0 {
		t.Fatalf("want a plain grant once the abandoned admission is settled: %s", r)
	}
	a.ok("lease", "acquire", "--holder", "T-2", "file:a.txt")

	// Killed after the local transaction, before the confirmation: the
	// next admission here confirms the shared half.
	crash("admission/shared-committed", "file:b.txt", "intent:lib/**")
	a.ok("lease", "acquire", "--holder", "T-2", "intent:more/**") // settles
	r = b.acquire("T-8", "intent:lib/**")
	if _, w, _ := r.result(t); r.exit != 0 || len(w) != 1 || w[0].Lease.State != admission.StateActive {
		t.Fatalf("want a grant warning of T-1's active intent: %s", r)
	}
	ls, _, _ = a.ok("lease", "list", "--json", "--holder", "T-1").result(t)
	if len(ls) != 2 {
		t.Fatalf("T-1's leases after the crash was settled: %+v", ls)
	}
}

// TestCrashSeenFromAnotherHost: a client killed between the two phases
// of a mixed request, seen from another host, which cannot judge its
// processes: the pending half blocks, never granted, and once its etcd
// lease lapses it is quarantined; the next admission on the admitter's
// own host proves the admitter dead and deletes it. (The admitter's own
// host settling at once is TestCrashBetweenPhases.)
func TestCrashSeenFromAnotherHost(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	key := "example.com/crash-other-host"
	a, b := newHost(t, srv.Endpoint, key, "m-crash-other-a"), newHost(t, srv.Endpoint, key, "m-crash-other-b")
	// Overlapping intents block, so that a lapsed one is refused too (a
	// policy that warns grants beside it, with a warning).
	b.ok("policy", "set", admission.PolicyCrossWorktreeOverlap, "block")
	r := a.run([]string{"MAJLIS_FAILPOINTS=admission/shared-pending=crash"},
		"lease", "acquire", "--json", "--holder", "T-1", "--ttl", "1s", "file:a.txt", "intent:docs/**")
	if !r.killed {
		t.Fatalf("not killed: %s", r)
	}
	deadline := time.Now().Add(60 * time.Second)
	for pending := true; pending; {
		r := b.acquire("T-9", "intent:docs/**")
		_, _, code := r.result(t)
		switch {
		case r.exit == 0:
			t.Fatalf("granted over another host's unfinished admission: %s", r)
		case code == "quarantined":
			pending = false
		case code != "held" || time.Now().After(deadline):
			t.Fatalf("want held, then quarantined once the etcd lease lapses: %s", r)
		}
	}
	a.ok("lease", "acquire", "--holder", "T-2", "file:b.txt") // settles nothing shared
	a.ok("lease", "acquire", "--holder", "T-2", "intent:more/**")
	r = b.acquire("T-9", "intent:docs/**")
	if _, w, _ := r.result(t); r.exit != 0 || len(w) != 0 {
		t.Fatalf("want a plain grant once the admitter's host settled it: %s", r)
	}
}

// TestLapseWhileWriterRuns: a cluster lease whose etcd lease lapsed while
// its owner process still exists (stopped with SIGSTOP) is quarantined
// for the other clone, never granted to it, until resolved.
func TestLapseWhileWriterRuns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	key := "example.com/lapse"
	a, b := newHost(t, srv.Endpoint, key), newHost(t, srv.Endpoint, key)
	owner := exec.Command("sleep", "3600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	pid := owner.Process.Pid
	r := a.ok("lease", "acquire", "--json", "--holder", "T-1", "--ttl", "1s", "--owner-pid", strconv.Itoa(pid), "cluster:lapse-migration")
	ls, _, _ := r.result(t)
	if err := owner.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := b.acquire("T-2", "cluster:lapse-migration")
		_, _, code := r.result(t)
		if r.exit == 0 {
			t.Fatalf("granted while the other clone's lease had not been released: %s", r)
		}
		if code == "quarantined" {
			break
		}
		if code != "held" || time.Now().After(deadline) {
			t.Fatalf("want held, then quarantined once the lease lapses: %s", r)
		}
	}
	b.ok("lease", "resolve", ls[0].ID, "--writer-stopped")
	b.ok("lease", "acquire", "--holder", "T-2", "cluster:lapse-migration")
}
