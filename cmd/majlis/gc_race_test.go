package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// A branch gc found unused, then checked out by someone before gc deletes
// it (another process, stopped exactly there by the failpoint gc/checked):
// gc puts it back at the same tip and reports it skipped.
func TestGCPutsBackABranchTakenMeanwhile(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	repo := fixtures.NewRepo(t)
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
	for _, args := range [][]string{{"init"}, {"workspace", "allocate", "T-1"}, {"workspace", "reclaim", "T-1", "--yes"}} {
		if r := majlisRun(t, bin, repo.Dir, env, args...); r.exit != 0 {
			t.Fatal(r)
		}
	}
	tip := repo.RevParse("majlis/T-1")
	r := majlisRun(t, bin, repo.Dir, env, "gc", "--preview", "--json")
	m := regexp.MustCompile(`"digest": "(sha256:[0-9a-f]{64})"`).FindStringSubmatch(r.stdout)
	if r.exit != 0 || m == nil || !strings.Contains(r.stdout, `"branch": "majlis/T-1"`) {
		t.Fatalf("the preview does not list majlis/T-1 for deletion\n%s", r)
	}

	gate := filepath.Join(t.TempDir(), "gate")
	cmd := exec.Command(bin, "gc", "--confirm", m[1], "--json")
	cmd.Dir = repo.Dir
	cmd.Env = append(append(os.Environ(), env...), "MAJLIS_FAILPOINTS=gc/checked=wait("+gate+")")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gc/checked to be reached", func() bool { _, err := os.Stat(gate + ".reached"); return err == nil })
	other := filepath.Join(t.TempDir(), "other")
	repo.Git("worktree", "add", "-q", other, "majlis/T-1")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("gc exited %d (%v)\nstdout: %s\nstderr: %s", cmd.ProcessState.ExitCode(), ws, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "(it was put back)") {
		t.Errorf("gc does not report the branch put back:\n%s", stdout.String())
	}
	if got := repo.RevParse("refs/heads/majlis/T-1"); got != tip {
		t.Errorf("majlis/T-1 is at %s after gc, want %s", got, tip)
	}
	if out := fixtures.Git(t, other, "symbolic-ref", "HEAD"); strings.TrimSpace(out) != "refs/heads/majlis/T-1" {
		t.Errorf("the other worktree's HEAD is %q", out)
	}
	if out := repo.Git("for-each-ref", "refs/majlis/deleted"); out != "" {
		t.Errorf("a kept tip is left for a branch put back: %s", out)
	}
}
