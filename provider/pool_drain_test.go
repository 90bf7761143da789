package provider

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// poolDrainPoints are the failpoints of a drain, in order.
var poolDrainPoints = []string{"pool/drain", "pool/drain-moved", "pool/drain-deleted", "pool/drain-dropped"}

// drainJSON runs pool drain --json in a process and decodes its result.
func drainJSON(t *testing.T, bin, dir string, env []string, args ...string) (*PoolResult, crashRun) {
	t.Helper()
	r := crashExec(t, bin, dir, env, append([]string{"pool", "drain", "--json"}, args...)...)
	var res PoolResult
	if r.exit == 0 {
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("drain's JSON: %v\n%s", err, r)
		}
	}
	return &res, r
}

// waitGate starts cmd's process with MAJLIS_FAILPOINTS=fp=wait(gate) and
// waits until it reaches fp.
func waitGate(t *testing.T, bin, dir, fp string, args ...string) (*crashProc, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	proc := crashStart(t, bin, dir, []string{"MAJLIS_FAILPOINTS=" + fp + "=wait(" + gate + ")"}, args...)
	crashWaitFor(t, fp+" to be reached", 2*time.Minute, func() bool {
		_, err := os.Stat(gate + ".reached")
		return err == nil
	})
	return proc, gate
}

// TestPoolDrainKeepsWhatIsWrittenMeanwhile: an ignored file written into
// a pooled worktree while a drain is under way (a real process, stopped
// at each of its points before the deletion) is never deleted: written
// before the drain moved the folder aside, the drain finds it and puts
// the worktree back with it; written by path after, it cannot land there.
func TestPoolDrainKeepsWhatIsWrittenMeanwhile(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for _, fp := range []string{"pool/drain", "pool/drain-moved"} {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p, _, _ := poolScene(t, 1)
			l, _ := p.PoolList()
			pooled := l.Pool[0]
			proc, gate := waitGate(t, bin, repo.Dir, fp, "pool", "drain", "--json")
			notes := filepath.Join(pooled.Path, "d0", "notes.log")
			werr := os.WriteFile(notes, []byte("only-copy\n"), 0o644)
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r := proc.wait()
			if r.exit != 0 {
				t.Fatalf("drain\n%s", r)
			}
			var res PoolResult
			r.decode(t, &res)
			if werr == nil {
				if b, err := os.ReadFile(notes); err != nil || string(b) != "only-copy\n" {
					t.Fatalf("the file written during the drain: %q, %v\n%s", b, err, r)
				}
				if len(res.Left) != 1 || len(res.Drained) != 0 || !strings.Contains(res.Left[0].Reason, "notes.log") {
					t.Errorf("drain: %+v", res)
				}
				if rep, _ := p.Doctor(t.Context()); !hasFinding(rep, FindingPoolAside) {
					t.Errorf("doctor: %+v", rep.Findings)
				}
				os.Remove(notes)
			} else if fp != "pool/drain-moved" || len(res.Drained) != 1 {
				t.Fatalf("the write failed (%v) and the drain: %+v", werr, res)
			}
			// What is clean goes at the next drain; nothing is left behind.
			if res, r := drainJSON(t, bin, repo.Dir, nil); r.exit != 0 || len(res.Left) != 0 || len(res.Pool) != 0 {
				t.Fatalf("drain again: %+v\n%s", res, r)
			}
			assertPoolEmpty(t, repo, p)
		})
	}
}

// assertPoolEmpty checks that nothing of the pool is left: no folder in
// the workspace root, no worktree of git's but the main one, no pooled
// claim, no pool finding.
func assertPoolEmpty(t *testing.T, repo *fixtures.Repo, p *Provider) {
	t.Helper()
	ents, _ := os.ReadDir(p.reg.WorkspaceRoot)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), poolFolderPrefix) {
			t.Errorf("left in the workspace root: %s", e.Name())
		}
	}
	if n := worktreeCount(t, repo); n != 1 {
		t.Errorf("%d worktrees:\n%s", n, repo.Git("worktree", "list", "--porcelain"))
	}
	if l, err := p.PoolList(); err != nil || len(l.Pool) != 0 {
		t.Errorf("pool: %+v, %v", l, err)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("doctor: %+v, %v", rep, err)
	}
}

// TestPoolDrainLeavesWhatAProcessUses: a pooled worktree that is some
// process's working directory is not deleted: the drain puts it back and
// sets it aside, doctor names it, and once the process is gone the next
// drain deletes it.
func TestPoolDrainLeavesWhatAProcessUses(t *testing.T) {
	t.Parallel()
	repo, p, _, _ := poolScene(t, 1)
	l, _ := p.PoolList()
	pooled := l.Pool[0]
	sleeper := exec.Command("sleep", "600")
	sleeper.Dir = filepath.Join(pooled.Path, "d1")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	res, err := p.PoolDrain(t.Context(), PoolDrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Left) != 1 || !strings.Contains(res.Left[0].Reason, "uses it") || res.Left[0].Path != pooled.Path {
		t.Fatalf("drain with a process in it: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(pooled.Path, "d1")); err != nil {
		t.Fatalf("the worktree is not back at its path: %v", err)
	}
	if rep, _ := p.Doctor(t.Context()); !hasFinding(rep, FindingPoolAside) {
		t.Errorf("doctor: %+v", rep.Findings)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if res, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(res.Drained) != 1 {
		t.Fatalf("drain once the process is gone: %+v, %v", res, err)
	}
	assertPoolEmpty(t, repo, p)
}

// TestPoolDrainCrash: drain killed (SIGKILL) at each of its points, then
// doctor, then drain again: the worktree is at its path, aside, or gone,
// doctor names it while it is not finished, and the next drain leaves
// nothing behind.
func TestPoolDrainCrash(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for _, fp := range poolDrainPoints {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p, _, _ := poolScene(t, 2)
			env := []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}
			if _, r := drainJSON(t, bin, repo.Dir, env); !r.killed {
				t.Fatalf("drain not killed at %s\n%s", fp, r)
			}
			l, err := p.PoolList()
			if err != nil || len(l.Pool) != 2 || l.Pool[0].State != wire.PoolDraining {
				t.Fatalf("pool after the crash: %+v, %v", l, err)
			}
			rep, _ := p.Doctor(t.Context())
			if !hasFinding(rep, FindingPoolDrainInterrupted) || hasFinding(rep, FindingWorkspaceMissing) {
				t.Errorf("doctor after the crash: %+v", rep.Findings)
			}
			if fp == "pool/drain-moved" && !strings.HasSuffix(l.Pool[0].Path, drainAsideSuffix) {
				t.Errorf("pool list does not say where it is: %+v", l.Pool[0])
			}
			res, r := drainJSON(t, bin, repo.Dir, nil)
			if r.exit != 0 || len(res.Drained) != 2 || len(res.Left) != 0 {
				t.Fatalf("drain after the crash: %+v\n%s", res, r)
			}
			assertPoolEmpty(t, repo, p)
		})
	}
}

// TestPoolDrainRacesAllocations: a drain races allocations (processes)
// for the pooled worktrees: each ends in exactly one place (one
// workspace, or deleted by the drain), the drain never fails for the
// ones the allocations took, and every workspace is clean at its base.
func TestPoolDrainRacesAllocations(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for round := range fixtures.Rounds(2, 10) {
		repo, p, _, b := poolScene(t, 3)
		l, _ := p.PoolList()
		var procs []*crashProc
		for i := range 3 {
			procs = append(procs, crashStart(t, bin, repo.Dir, nil, "workspace", "allocate", "T-"+string(rune('1'+i)), "--base", b, "--json"))
		}
		drain := crashStart(t, bin, repo.Dir, nil, "pool", "drain", "--json")
		where := map[string]string{}
		for i, proc := range procs {
			r := proc.wait()
			if r.exit != 0 {
				t.Fatalf("round %d: allocate\n%s", round, r)
			}
			var out struct {
				Workspace Workspace `json:"workspace"`
			}
			r.decode(t, &out)
			ws := out.Workspace
			if st := gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall"); st != "" || strings.TrimSpace(gitOut(t, ws.Path, "rev-parse", "HEAD")) != b {
				t.Errorf("round %d: workspace %d: status %q", round, i, st)
			}
			if ws.Pool != nil && ws.Pool.Used {
				if where[ws.Pool.Name] != "" {
					t.Errorf("round %d: %s handed out twice", round, ws.Pool.Name)
				}
				where[ws.Pool.Name] = ws.Binding
			}
		}
		r := drain.wait()
		if r.exit != 0 {
			t.Fatalf("round %d: drain\n%s", round, r)
		}
		var res PoolResult
		r.decode(t, &res)
		for _, d := range res.Drained {
			if where[d.Name] != "" {
				t.Errorf("round %d: %s drained and handed out to %s", round, d.Name, where[d.Name])
			}
			where[d.Name] = "drained"
		}
		for _, d := range res.Left {
			if where[d.Name] == "" || where[d.Name] == "drained" || d.State != wire.PoolTaken {
				t.Errorf("round %d: left %+v, handed to %q", round, d, where[d.Name])
			}
		}
		for _, w := range l.Pool {
			if where[w.Name] == "" {
				t.Errorf("round %d: %s is neither in a workspace nor drained: %+v", round, w.Name, res)
			}
		}
		if after, _ := p.PoolList(); len(after.Pool) != 0 {
			t.Errorf("round %d: pool after: %+v", round, after.Pool)
		}
		if rep, _ := p.Doctor(t.Context()); !rep.OK {
			t.Errorf("round %d: doctor: %+v", round, rep.Findings)
		}
	}
}

// TestPoolHandOutCrashThenDrain: an allocation killed after it switched
// the pooled worktree (pool/switched) or gave it the workspace's lock and
// pin (pool/handed), then retried: the retry finishes the hand-out, or,
// when something was written into it meanwhile, sets it aside at the
// base it was switched to; once that is cleaned up, a drain deletes it.
// Nothing is left behind either way.
func TestPoolHandOutCrashThenDrain(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for _, fp := range []string{"pool/taken", "pool/switched", "pool/handed"} {
		for _, tamper := range []bool{false, true} {
			name := strings.ReplaceAll(fp, "/", "-")
			if tamper {
				name += "-written"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				repo, p, _, b := poolScene(t, 1)
				l, _ := p.PoolList()
				pooled := l.Pool[0]
				args := []string{"workspace", "allocate", "T-1", "--base", b, "--request-id", "r-1", "--json"}
				if r := crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}, args...); !r.killed {
					t.Fatalf("not killed at %s\n%s", fp, r)
				}
				notes := filepath.Join(pooled.Path, "d0", "notes.log")
				if tamper {
					if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				retry := crashExec(t, bin, repo.Dir, nil, args...)
				if retry.exit != 0 {
					t.Fatalf("retry\n%s", retry)
				}
				var out struct {
					Workspace Workspace `json:"workspace"`
				}
				retry.decode(t, &out)
				if used := out.Workspace.Pool != nil && out.Workspace.Pool.Used; used == tamper {
					t.Errorf("pool used by the retry: %v (something written into it: %v)", used, tamper)
				}
				if tamper {
					if b, err := os.ReadFile(notes); err != nil || string(b) != "mine\n" {
						t.Fatalf("what was written: %q, %v", b, err)
					}
					if res, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(res.Left) != 1 {
						t.Fatalf("drain of what holds a file: %+v, %v", res, err)
					}
					os.Remove(notes)
				}
				if res, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(res.Left) != 0 || len(res.Pool) != 0 {
					t.Fatalf("drain: %+v, %v", res, err)
				}
				if _, err := os.Lstat(pooled.Path); err == nil {
					t.Errorf("the pooled folder is still there")
				}
				if n := worktreeCount(t, repo); n != 2 {
					t.Errorf("%d worktrees, want the main one and T-1's", n)
				}
				if rep, _ := p.Doctor(t.Context()); !rep.OK {
					t.Errorf("doctor: %+v", rep.Findings)
				}
			})
		}
	}
}

// TestPoolDrainFolderDeletedByHand: a pooled worktree whose folder was
// deleted by hand is named by doctor, and a drain drops git's entry of
// it (pinned by its claim, locked by majlis) and retires its claim; one
// whose entry names a folder that exists is left.
func TestPoolDrainFolderDeletedByHand(t *testing.T) {
	t.Parallel()
	repo, p, _, _ := poolScene(t, 2)
	l, _ := p.PoolList()
	if err := os.RemoveAll(l.Pool[0].Path); err != nil {
		t.Fatal(err)
	}
	// The other one moved by hand (unlocked, then git worktree move): its
	// entry names a folder that exists.
	moved := filepath.Join(t.TempDir(), "moved")
	repo.Git("worktree", "unlock", l.Pool[1].Path)
	repo.Git("worktree", "move", l.Pool[1].Path, moved)
	rep, _ := p.Doctor(t.Context())
	if !hasFinding(rep, FindingPoolMissing) || hasFinding(rep, FindingWorkspaceMissing) {
		t.Errorf("doctor: %+v", rep.Findings)
	}
	res, err := p.PoolDrain(t.Context(), PoolDrainOptions{})
	if err != nil || len(res.Drained) != 1 || res.Drained[0].Name != l.Pool[0].Name || len(res.Left) != 1 {
		t.Fatalf("drain: %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(moved, "d0")); err != nil {
		t.Errorf("the folder moved by hand: %v", err)
	}
	if n := worktreeCount(t, repo); n != 2 {
		t.Errorf("%d worktrees:\n%s", n, repo.Git("worktree", "list", "--porcelain"))
	}
}
