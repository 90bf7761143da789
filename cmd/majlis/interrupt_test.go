package main

// Ctrl-C and SIGTERM through the real binary, built with the failpoints
// tag: a failpoint wait(PATH) stops the command at a known point, the test
// sends the signal, waits until majlis says it stops, then lets it go on.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// lockedBuffer is a bytes.Buffer written by a child process's pipe and
// read by the test meanwhile.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// interruptAt runs majlis ARGS until the failpoint fp (armed with
// wait(PATH)) is reached, sends sig, waits until majlis says it is
// stopping, lets it go on, and returns its run.
func interruptAt(t *testing.T, bin, dir string, env []string, fp string, sig syscall.Signal, args ...string) binRun {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "MAJLIS_FAILPOINTS="+fp+"=wait("+gate+")")
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fp+" to be reached", func() bool { _, err := os.Stat(gate + ".reached"); return err == nil })
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "majlis to say it stops", func() bool { return strings.Contains(stderr.String(), "interrupted: stopping") })
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	return binRun{args: args, exit: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// noIndexLock fails if git left a lock file in the repository's git
// directory or any worktree's.
func noIndexLock(t *testing.T, commonDir string) {
	t.Helper()
	filepath.WalkDir(commonDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".lock") && !strings.Contains(path, string(filepath.Separator)+"majlis"+string(filepath.Separator)) {
			t.Errorf("a lock file was left behind: %s", path)
		}
		return nil
	})
}

func TestInterruptAllocateUndoes(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		exit int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			repo := fixtures.NewRepo(t)
			env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
			if r := majlisRun(t, bin, repo.Dir, env, "init"); r.exit != 0 {
				t.Fatal(r)
			}
			r := interruptAt(t, bin, repo.Dir, env, "allocate/claimed", tc.sig, "workspace", "allocate", "T-1", "--json")
			if r.exit != tc.exit {
				t.Fatalf("exit %d, want %d\n%s", r.exit, tc.exit, r)
			}
			if code, d := r.jsonError(t); code != "interrupted" || d["signal"] == nil {
				t.Fatalf("JSON error %q %v, want interrupted with the signal\n%s", code, d, r)
			}
			// Undone: no worktree, no branch, the binding free again.
			if _, err := os.Stat(filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces", "T-1")); !os.IsNotExist(err) {
				t.Errorf("the workspace's directory is there after the interrupted allocate (%v)", err)
			}
			if out, _ := exec.Command("git", "-C", repo.Dir, "branch", "--list", "majlis/T-1").Output(); len(out) != 0 {
				t.Errorf("the branch majlis/T-1 is left: %s", out)
			}
			noIndexLock(t, filepath.Join(repo.Dir, ".git"))
			if r := majlisRun(t, bin, repo.Dir, env, "workspace", "allocate", "T-1", "--json"); r.exit != 0 {
				t.Fatalf("allocating the binding again: %s", r)
			}
		})
	}
}

func TestInterruptReclaimResumes(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	for _, fp := range []string{"reclaim/salvaged", "reclaim/moved"} {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			repo := fixtures.NewRepo(t)
			env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
			for _, args := range [][]string{{"init"}, {"workspace", "allocate", "T-1"}} {
				if r := majlisRun(t, bin, repo.Dir, env, args...); r.exit != 0 {
					t.Fatal(r)
				}
			}
			ws := filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces", "T-1")
			if err := os.WriteFile(filepath.Join(ws, "work.txt"), []byte("unsaved\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// No request id given: one is made up and named in the error.
			r := interruptAt(t, bin, repo.Dir, env, fp, syscall.SIGINT, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "0", "--json")
			if r.exit != 130 {
				t.Fatalf("exit %d, want 130\n%s", r.exit, r)
			}
			code, d := r.jsonError(t)
			id, _ := d["request_id"].(string)
			if code != "interrupted" || !strings.HasPrefix(id, "reclaim-T-1-") {
				t.Fatalf("JSON error %q %v, want interrupted with a request id\n%s", code, d, r)
			}
			noIndexLock(t, filepath.Join(repo.Dir, ".git"))
			// The salvage is there: nothing was lost.
			if out, err := exec.Command("git", "-C", repo.Dir, "show", "refs/majlis/salvage/T-1/1:work.txt").Output(); err != nil || string(out) != "unsaved\n" {
				t.Fatalf("the salvage does not hold the work: %q %v", out, err)
			}
			// The same request id resumes and finishes it.
			r = majlisRun(t, bin, repo.Dir, env, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "0", "--request-id", id, "--json")
			if r.exit != 0 || !strings.Contains(r.stdout, `"removed": true`) {
				t.Fatalf("resuming with %s: %s", id, r)
			}
			if _, err := os.Stat(ws); !os.IsNotExist(err) {
				t.Errorf("the workspace is still there after the resumed reclaim (%v)", err)
			}
			if out, _ := exec.Command("git", "-C", repo.Dir, "worktree", "list", "--porcelain").Output(); strings.Contains(string(out), "T-1") {
				t.Errorf("git still lists the workspace:\n%s", out)
			}
			// Again: the recorded result.
			if r2 := majlisRun(t, bin, repo.Dir, env, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "0", "--request-id", id, "--json"); r2.exit != 0 {
				t.Fatalf("replaying %s: %s", id, r2)
			}
		})
	}
}

// TestInterruptPurgeDue: Ctrl-C on gc --purge-due after the purge's
// salvage and before it recorded its start stops it there: exit 130,
// the kept trash folder whole with its work (not half purged), and the
// next gc --purge-due purges it.
func TestInterruptPurgeDue(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	repo := fixtures.NewRepo(t)
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db"), "MAJLIS_BACKGROUND_PURGE=0"}
	for _, args := range [][]string{{"init"}, {"workspace", "allocate", "T-1"}} {
		if r := majlisRun(t, bin, repo.Dir, env, args...); r.exit != 0 {
			t.Fatal(r)
		}
	}
	ws := filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces", "T-1")
	if err := os.WriteFile(filepath.Join(ws, "work.txt"), []byte("unsaved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := majlisRun(t, bin, repo.Dir, env, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "1ns", "--json")
	var out struct {
		Reclaim struct {
			TrashPath string `json:"trash_path"`
		} `json:"reclaim"`
	}
	if rec.exit != 0 || json.Unmarshal([]byte(rec.stdout), &out) != nil || out.Reclaim.TrashPath == "" {
		t.Fatalf("reclaim keeping the trash\n%s", rec)
	}
	r := interruptAt(t, bin, repo.Dir, env, "purge/salvaged", syscall.SIGINT, "gc", "--purge-due", "--json")
	if r.exit != 130 {
		t.Fatalf("exit %d, want 130\n%s", r.exit, r)
	}
	if b, err := os.ReadFile(filepath.Join(out.Reclaim.TrashPath, "work.txt")); err != nil || string(b) != "unsaved\n" {
		t.Fatalf("the kept trash after the interrupted purge: %q, %v", b, err)
	}
	if doc := majlisRun(t, bin, repo.Dir, env, "doctor", "--json"); strings.Contains(doc.stdout, "trash_half_purged") {
		t.Errorf("the purge stopped before it began deleting, yet doctor finds it half purged\n%s", doc)
	}
	if again := majlisRun(t, bin, repo.Dir, env, "gc", "--purge-due", "--json"); again.exit != 0 || !strings.Contains(again.stdout, out.Reclaim.TrashPath) {
		t.Fatalf("the next purge\n%s", again)
	}
	if _, err := os.Lstat(out.Reclaim.TrashPath); !os.IsNotExist(err) {
		t.Errorf("the kept trash is still there after the next purge: %v", err)
	}
}
