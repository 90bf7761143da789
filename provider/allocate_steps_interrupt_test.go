package provider

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// syncBuffer is a buffer a child's pipe writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ctrlC runs the binary in its own process group, waits until gate
// (a failpoint's wait(PATH), or a filter's) is reached, sends SIGINT to
// the whole group as a terminal's Ctrl-C does (or to majlis alone),
// lets the gate go, and returns the exit status and output.
func ctrlC(t *testing.T, bin, dir, gate string, group bool, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	crashWaitFor(t, "the gate to be reached", 60*time.Second, func() bool { _, err := os.Stat(gate + ".reached"); return err == nil })
	pid := cmd.Process.Pid
	if group {
		pid = -pid
	}
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !group {
		crashWaitFor(t, "majlis to say it stops", 60*time.Second, func() bool { return strings.Contains(out.String(), "interrupted: stopping") })
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), out.String()
}

// Ctrl-C during the many-worktrees add, at the failpoint between the
// detached worktree and its checkout (SIGINT to majlis, which stops at
// the next safe point), and in the middle of the checkout (SIGINT to the
// whole process group, git and its filter included): the allocation is
// undone, nothing of it is left, no lock file, and the binding can be
// allocated again.
func TestAllocateManyWorktreesCtrlC(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, tc := range []struct {
		name  string
		group bool
	}{{"at gitops/add-detached", false}, {"during the checkout", true}} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := manyWorktreesRepo(t)
			gate := filepath.Join(t.TempDir(), "gate")
			var env []string
			if tc.group {
				// A filter that says it is running and waits for the gate.
				script := filepath.Join(t.TempDir(), "slow.sh")
				os.WriteFile(script, []byte("#!/bin/sh\n: > '"+gate+".reached'\nwhile [ ! -e '"+gate+"' ]; do sleep 0.01; done\ncat\n"), 0o755)
				repo.WriteFile(".gitattributes", "*.bin filter=slow\n")
				repo.WriteFile("f.bin", "data\n")
				repo.Commit("filtered")
				repo.Config("filter.slow.smudge", script)
				repo.Config("filter.slow.clean", "cat")
				repo.Config("filter.slow.required", "true")
			} else {
				env = []string{"MAJLIS_FAILPOINTS=gitops/add-detached=wait(" + gate + ")"}
			}
			refs := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
			code, out := ctrlC(t, bin, repo.Dir, gate, tc.group, env, "workspace", "allocate", "T-1", "--json")
			if code == 0 {
				t.Fatalf("the interrupted allocation succeeded:\n%s", out)
			}
			path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the interrupted allocation left %s (%v):\n%s", path, err, out)
			}
			wts, err := gitops.ListWorktrees(t.Context(), repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wts {
				if w.Path == path {
					t.Fatalf("git still lists %s: %+v", path, w)
				}
			}
			if got := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); got != refs {
				t.Fatalf("refs after the interrupted allocation:\n%s\nwant\n%s\n%s", got, refs, out)
			}
			locks, _ := filepath.Glob(filepath.Join(repo.CommonDir(), "worktrees", "*", "*.lock"))
			if l, _ := filepath.Glob(filepath.Join(repo.CommonDir(), "*.lock")); len(l)+len(locks) > 0 {
				t.Fatalf("lock files left: %v %v", l, locks)
			}
			if tc.group {
				repo.Config("filter.slow.smudge", "cat")
			}
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			if got := strings.TrimSpace(fixtures.Git(t, ws.Path, "symbolic-ref", "HEAD")); got != "refs/heads/majlis/T-1" {
				t.Fatalf("HEAD of the allocated workspace is %q", got)
			}
		})
	}
}

// killDuringCheckout starts an allocation of T-1 with request id req-1
// whose checkout waits in a smudge filter, and SIGKILLs majlis there
// (alone: git goes on and finishes the checkout once the gate opens; or
// with its whole process group, git and the filter included). It returns
// the workspace path once every process of the add is gone.
func killDuringCheckout(t *testing.T, bin string, repo *fixtures.Repo, p *Provider, group bool) string {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	script := filepath.Join(t.TempDir(), "slow.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n: > '"+gate+".reached'\nwhile [ ! -e '"+gate+"' ]; do sleep 0.01; done\ncat\n: > '"+gate+".done'\n"), 0o755)
	repo.WriteFile(".gitattributes", "*.bin filter=slow\n")
	repo.WriteFile("f.bin", "data\n")
	repo.Commit("filtered")
	repo.Config("filter.slow.smudge", script)
	repo.Config("filter.slow.clean", "cat")
	repo.Config("filter.slow.required", "true")
	cmd := exec.Command(bin, "workspace", "allocate", "T-1", "--request-id", "req-1", "--json")
	cmd.Dir = repo.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	crashWaitFor(t, "the checkout to reach the filter", 60*time.Second, func() bool { _, err := os.Stat(gate + ".reached"); return err == nil })
	pid := cmd.Process.Pid
	if group {
		pid = -pid
	}
	syscall.Kill(pid, syscall.SIGKILL)
	cmd.Wait()
	os.WriteFile(gate, nil, 0o644)
	path := filepath.Join(p.reg.WorkspaceRoot, "T-1")
	if !group {
		// git finishes the checkout on its own: its index written, its
		// lock gone.
		admin := fixtures.AdminDir(t, path)
		crashWaitFor(t, "the orphaned checkout to finish", 60*time.Second, func() bool {
			_, done := os.Stat(gate + ".done")
			_, lock := os.Stat(filepath.Join(admin, "index.lock"))
			_, index := os.Stat(filepath.Join(admin, "index"))
			return done == nil && errors.Is(lock, os.ErrNotExist) && index == nil
		})
	}
	repo.Config("filter.slow.smudge", "cat")
	return path
}

// SIGKILL of majlis in the middle of the many-worktrees checkout: git
// finishes the checkout, and the worktree is left detached, clean, locked
// with the claim's reason. A retry with the same request id finishes the
// add (as a retry after git's own add, which finishes on its own).
func TestAllocateManyWorktreesKilledInCheckoutResumes(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := manyWorktreesRepo(t)
	path := killDuringCheckout(t, bin, repo, p, false)
	again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-1", "--request-id", "req-1", "--json")
	if again.exit != 0 {
		t.Fatalf("the retry of the allocation killed in its checkout failed:\n%s", again)
	}
	checkResumed(t, bin, repo, path, "T-1", true)
}

// SIGKILL of the whole process group in the middle of the checkout (git
// killed too): the checkout is cut short, and a retry refuses to guess,
// names the path, says how to free it, and changes nothing.
func TestAllocateManyWorktreesKilledInCheckoutWithGit(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := manyWorktreesRepo(t)
	path := killDuringCheckout(t, bin, repo, p, true)
	refs := repo.Git("for-each-ref", "--format=%(refname) %(objectname)")
	again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-1", "--request-id", "req-1", "--json")
	if again.exit == 0 || !strings.Contains(again.stdout, path) || !strings.Contains(again.stdout, "unlock") {
		t.Fatalf("the retry did not refuse naming %s and the unlock:\n%s", path, again)
	}
	if _, err := os.Lstat(filepath.Join(path, ".git")); err != nil {
		t.Fatalf("the retry removed the worktree it could not verify: %v", err)
	}
	if got := repo.Git("for-each-ref", "--format=%(refname) %(objectname)"); got != refs {
		t.Fatalf("the refused retry changed refs:\n%s\nwant\n%s", got, refs)
	}
	// Freed as the hint says, the retry allocates.
	repo.Git("worktree", "unlock", path)
	repo.Git("worktree", "remove", "--force", path)
	if again := crashExec(t, bin, repo.Dir, nil, "workspace", "allocate", "T-1", "--request-id", "req-1", "--json"); again.exit != 0 {
		t.Fatalf("the retry after the worktree was removed failed:\n%s", again)
	}
}
