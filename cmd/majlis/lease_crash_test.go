package main

// Crash tests of lease acquire through the real binary, built with the
// failpoints tag: a `majlis lease acquire` killed (SIGKILL) inside an
// admission leaves no grant, and the same resources can then be acquired.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// failpointsBinary is the failpoints build of cmd/majlis (fixtures.FailpointsBinary).
func failpointsBinary(t *testing.T) string { return fixtures.FailpointsBinary(t) }

// A binRun is one finished run of the binary.
type binRun struct {
	args           []string
	exit           int
	killed         bool // SIGKILL ended it
	stdout, stderr string
}

func (r binRun) String() string {
	return fmt.Sprintf("majlis %s: exit %d (killed %v)\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.exit, r.killed, r.stdout, r.stderr)
}

// majlisRun runs the binary in dir with extra environment variables and
// waits for it (reaping it, so that a killed process is provably dead).
func majlisRun(t *testing.T, bin, dir string, env []string, args ...string) binRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := binRun{args: args, exit: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		r.killed = true
	} else if err != nil && !errors.As(err, new(*exec.ExitError)) {
		t.Fatalf("majlis %v: %v", args, err)
	}
	return r
}

// leases decodes the one JSON object of a `lease ... --json` run.
func (r binRun) leases(t *testing.T) []admission.Lease {
	t.Helper()
	var out struct {
		Leases []admission.Lease `json:"leases"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&out); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON object with leases (%v)\n%s", err, r)
	}
	return out.Leases
}

func TestLeaseAcquireCrash(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	if r := majlisRun(t, bin, t.TempDir(), nil, "debug", "failpoints", "--json"); !strings.Contains(r.stdout, `"enabled": true`) ||
		!strings.Contains(r.stdout, `"admission/in-transaction"`) {
		t.Fatalf("the failpoints binary does not arm admission's failpoints\n%s", r)
	}
	for _, tc := range []struct {
		name      string
		failpoint string
		resources []string
		// pending: the crash comes after the pending host rows of a mixed
		// set committed; they stay, listed as pending, granting nothing.
		pending bool
	}{
		{"repository set, inside the transaction", "admission/in-transaction", []string{"file:a.txt", "intent:src/**"}, false},
		{"host set, inside the transaction", "admission/in-transaction", []string{"host:port:3000"}, false},
		{"mixed set, inside the repository transaction", "admission/in-transaction", []string{"file:a.txt", "intent:src/**", "host:port:3000"}, true},
		{"mixed set, host rows pending", "admission/host-pending", []string{"file:a.txt", "host:port:3000"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := fixtures.NewRepo(t)
			env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db"), admission.TokenEnv + "=crash-test-token-0123456789"}
			if r := majlisRun(t, bin, repo.Dir, env, "init"); r.exit != 0 {
				t.Fatal(r)
			}
			crash := append([]string{"lease", "acquire", "--holder", "A", "--json"}, tc.resources...)
			r := majlisRun(t, bin, repo.Dir, append(env, "MAJLIS_FAILPOINTS="+tc.failpoint+"=crash"), crash...)
			if !r.killed {
				t.Fatalf("the acquire was not killed at %s\n%s", tc.failpoint, r)
			}

			// No grant survives: no lease at all, or only pending host
			// rows (which grant nothing).
			r = majlisRun(t, bin, repo.Dir, env, "lease", "list", "--json")
			for _, l := range r.leases(t) {
				if !tc.pending || l.State != admission.StatePending || l.Scope != admission.ScopeHost {
					t.Errorf("after the crash, lease list shows %s %s (%s)", l.Resource, l.ID, l.State)
				}
			}

			// The same resources are free for another holder.
			acquire := append([]string{"lease", "acquire", "--holder", "B", "--json"}, tc.resources...)
			r = majlisRun(t, bin, repo.Dir, env, acquire...)
			if r.exit != 0 {
				t.Fatalf("acquiring the resources after the crash: %s", r)
			}
			var got []string
			for _, l := range r.leases(t) {
				got = append(got, l.Resource)
			}
			if !slices.Equal(got, tc.resources) {
				t.Errorf("acquired %v after the crash, want %v", got, tc.resources)
			}
			r = majlisRun(t, bin, repo.Dir, env, "lease", "list", "--json")
			for _, l := range r.leases(t) {
				if l.Holder != "B" || l.State != admission.StateActive {
					t.Errorf("after the crash and B's acquire, lease list shows %s of %s (%s)", l.Resource, l.Holder, l.State)
				}
			}
		})
	}

	// After the repository transaction committed and before the host rows
	// were confirmed: the host name grants nothing yet, and a retry with
	// the same request id completes the grant.
	t.Run("mixed set, repository committed, retried", func(t *testing.T) {
		repo := fixtures.NewRepo(t)
		env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db"), admission.TokenEnv + "=crash-test-token-0123456789"}
		if r := majlisRun(t, bin, repo.Dir, env, "init"); r.exit != 0 {
			t.Fatal(r)
		}
		args := []string{"lease", "acquire", "--holder", "A", "--request-id", "job-1", "--json", "file:a.txt", "host:port:3000"}
		if r := majlisRun(t, bin, repo.Dir, append(env, "MAJLIS_FAILPOINTS=admission/repo-committed=crash"), args...); !r.killed {
			t.Fatalf("the acquire was not killed\n%s", r)
		}
		for _, l := range majlisRun(t, bin, repo.Dir, env, "lease", "list", "--json").leases(t) {
			if l.Scope == admission.ScopeHost && l.State != admission.StatePending {
				t.Errorf("after the crash, the host lease is %s, want pending", l.State)
			}
		}
		r := majlisRun(t, bin, repo.Dir, env, args...)
		if r.exit != 0 {
			t.Fatalf("retry: %s", r)
		}
		for _, l := range majlisRun(t, bin, repo.Dir, env, "lease", "list", "--json").leases(t) {
			if l.Holder != "A" || l.State != admission.StateActive {
				t.Errorf("after the retry: %s of %s is %s, want active leases of A", l.Resource, l.Holder, l.State)
			}
		}
	})
}
