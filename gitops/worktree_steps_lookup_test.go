package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// A held hook lookup: PATH starts with a git that runs the real one but
// holds `rev-parse --git-path hooks/post-checkout` (the post-checkout
// hook's lookup, worktree_steps.go) until release exists, writing
// "start <pid>" to log first. Every other command goes straight to git.
type heldLookUp struct {
	log, release string
}

func holdHookLookUp(t *testing.T) *heldLookUp {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := fixtures.TempDir(t)
	h := &heldLookUp{log: filepath.Join(dir, "lookups.log"), release: filepath.Join(dir, "release")}
	script := "#!/bin/sh\n" +
		"case \" $* \" in *' --git-path hooks/post-checkout '*)\n" +
		"  echo \"start $$\" >> '" + h.log + "'\n" +
		"  while [ ! -e '" + h.release + "' ]; do sleep 0.01; done ;;\n" +
		"esac\n" +
		"exec '" + real + "' \"$@\"\n"
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Cleanup(h.free) // never leave a lookup held
	return h
}

func (h *heldLookUp) free() { _ = os.WriteFile(h.release, nil, 0o644) }

// pids returns the lookups started so far.
func (h *heldLookUp) pids() []int {
	data, _ := os.ReadFile(h.log)
	var out []int
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if pid, err := strconv.Atoi(strings.TrimPrefix(l, "start ")); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// waitStarted waits, up to a deadline, until a lookup has started.
func (h *heldLookUp) waitStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for len(h.pids()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hook lookup never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// outliving returns the lookups that are still this process's children:
// running, or ended but not waited for. Either outlived the call.
func (h *heldLookUp) outliving() []int {
	var out []int
	for _, pid := range h.pids() {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone: waited for
		}
		// pid (comm) state ppid ...
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			out = append(out, pid)
		}
	}
	return out
}

// FinishAddInSteps refused at its branch (step 3) returns with no
// process of its own still running: the post-checkout hook's lookup is
// never started then, or waited for. The lookup is held until the test
// has looked, so a lookup started and left running is seen.
func TestFinishAddInStepsRefusedLeavesNoProcess(t *testing.T) {
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	repo.WriteFile("b.txt", "b\n")
	second := repo.Commit("second")
	repo.Git("branch", "elsewhere", second)
	p := filepath.Join(fixtures.TempDir(t), "one")
	repo.Git("worktree", "add", "--quiet", "--detach", "--lock", p, head)
	h := holdHookLookUp(t)

	err := FinishAddInSteps(ctx, repo.CommonDir(), p, "elsewhere", head)
	left := h.outliving()
	h.free()
	if !errors.Is(err, ErrBranchExists) {
		t.Fatalf("a branch at another commit: got %v, want ErrBranchExists", err)
	}
	if len(left) > 0 {
		t.Fatalf("FinishAddInSteps returned while its hook lookup (pid %v) still ran", left)
	}
}

// The add in steps, refused by git (a path that exists) or cancelled
// while it runs (Ctrl-C), returns only once the hook's lookup, which it
// started beside git's add, has ended and been waited for.
func TestAddWorktreeInStepsLeavesNoProcess(t *testing.T) {
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	base := fixtures.TempDir(t)
	threshold := 1
	repo.Git("worktree", "add", "--quiet", "--detach", filepath.Join(base, "first"), head)
	h := holdHookLookUp(t)

	t.Run("refused", func(t *testing.T) {
		occupied := filepath.Join(base, "occupied")
		if err := os.MkdirAll(filepath.Join(occupied, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		type outcome struct {
			err  error
			left []int
		}
		done := make(chan outcome, 1)
		go func() {
			err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: occupied, Branch: "fresh", Commit: head, LockReason: "r", StepsThreshold: threshold})
			done <- outcome{err, h.outliving()}
		}()
		h.waitStarted(t)
		h.free()
		o := <-done
		if !errors.Is(o.err, ErrPathExists) {
			t.Fatalf("existing path: got %v, want ErrPathExists", o.err)
		}
		if len(o.left) > 0 {
			t.Fatalf("AddWorktree returned while its hook lookup (pid %v) still ran", o.left)
		}
	})
	if err := os.Remove(h.release); err != nil {
		t.Fatal(err)
	}
	t.Run("cancelled", func(t *testing.T) {
		// As in a process a shell started in the background: SIGINT is
		// ignored, and so it is in every child. The cancelled lookup must
		// end all the same.
		signal.Ignore(os.Interrupt)
		defer signal.Reset(os.Interrupt)
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type outcome struct {
			err  error
			left []int
		}
		done := make(chan outcome, 1)
		before := len(h.pids())
		go func() {
			err := AddWorktree(cctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, "second"), Branch: "second", Commit: head, LockReason: "r", StepsThreshold: threshold})
			done <- outcome{err, h.outliving()}
		}()
		deadline := time.Now().Add(time.Minute)
		for len(h.pids()) == before {
			if time.Now().After(deadline) {
				t.Fatal("the hook lookup never started")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		var o outcome
		select {
		case o = <-done:
		case <-time.After(time.Minute):
			t.Fatal("a cancelled add still waits for its hook lookup a minute later")
		}
		if o.err == nil {
			t.Fatal("a cancelled add succeeded while its hook lookup was held")
		}
		if len(o.left) > 0 {
			t.Fatalf("AddWorktree returned while its hook lookup (pid %v) still ran", o.left)
		}
	})
}

// The post-checkout hook is looked up while git adds the worktree, but
// whether it is there is seen at the end, as git sees it: a hook made
// during the add runs, and one removed during the add does not (and is
// no error).
func TestAddWorktreeInStepsHookChangedDuringAdd(t *testing.T) {
	repo := fixtures.NewRepo(t)
	head := repo.Head()
	base := fixtures.TempDir(t)
	threshold := 1
	repo.Git("worktree", "add", "--quiet", "--detach", filepath.Join(base, "first"), head)
	hook := filepath.Join(repo.CommonDir(), "hooks", "post-checkout")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	h := holdHookLookUp(t)
	for i, tc := range []struct {
		name          string
		before, after bool // the hook is there when the add starts, when it ends
	}{
		{"made during the add", false, true},
		{"removed during the add", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := filepath.Join(base, fmt.Sprintf("ran-%d", i))
			script := []byte("#!/bin/sh\ntouch '" + ran + "'\n")
			if tc.before {
				if err := os.WriteFile(hook, script, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_ = os.Remove(h.release)
			started := len(h.pids())
			done := make(chan error, 1)
			go func() {
				done <- AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: filepath.Join(base, fmt.Sprintf("wt-%d", i)), Branch: fmt.Sprintf("b-%d", i), Commit: head, LockReason: "r", StepsThreshold: threshold})
			}()
			deadline := time.Now().Add(time.Minute)
			for len(h.pids()) == started {
				if time.Now().After(deadline) {
					t.Fatal("the hook lookup never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if tc.after {
				if err := os.WriteFile(hook, script, 0o755); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(hook); err != nil {
				t.Fatal(err)
			}
			h.free()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(ran); tc.after != (err == nil) {
				t.Fatalf("hook there at the end: %v; hook ran: %v", tc.after, err == nil)
			}
		})
	}
}
