package provider

import (
	"os"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// poolHandOutPoints are the failpoints of a hand-out, in order.
var poolHandOutPoints = []string{"pool/taken", "pool/switched", "pool/handed", "pool/moved", "allocate/created"}

// TestPoolCrashPointsDeclared: every failpoint of the pool is declared,
// and the crash tests below kill at each.
func TestPoolCrashPointsDeclared(t *testing.T) {
	t.Parallel()
	names := failpoint.Names()
	for _, n := range append(append(poolHandOutPoints, "pool/claimed", "pool/added", "pool/created"), poolDrainPoints...) {
		found := false
		for _, m := range names {
			found = found || m == n
		}
		if !found {
			t.Errorf("failpoint %s is not declared", n)
		}
	}
	for _, n := range names {
		tested := strings.Join(append(append(poolHandOutPoints, poolDrainPoints...), recyclePoints...), " ") + " pool/claimed pool/added pool/created"
		if strings.HasPrefix(n, "pool/") && !strings.Contains(tested, n) {
			t.Errorf("failpoint %s has no crash test", n)
		}
	}
}

// TestPoolHandOutCrash: allocate killed (SIGKILL) at every step of a
// hand-out, then retried with the same request id: the workspace is made
// at its base on its branch, clean, and the pooled worktree ends in
// exactly one place: the workspace, or set aside (doctor names it).
func TestPoolHandOutCrash(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for _, fp := range poolHandOutPoints {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p, _, b := poolScene(t, 1)
			l, err := p.PoolList()
			if err != nil {
				t.Fatal(err)
			}
			pooled := l.Pool[0]
			recs, _ := p.records.Binding(pooled.Name)
			made := recs[0].Events[EventCreated]
			args := []string{"workspace", "allocate", "T-1", "--base", b, "--request-id", "r-1", "--json"}
			killed := crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}, args...)
			if !killed.killed {
				t.Fatalf("not killed at %s\n%s", fp, killed)
			}
			rep, err := p.Doctor(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if fp != "allocate/created" && !hasFinding(rep, FindingPoolTakenUnfinished) {
				t.Errorf("doctor after the crash names no unfinished hand-out: %+v", rep.Findings)
			}
			retry := crashExec(t, bin, repo.Dir, nil, args...)
			if retry.exit != 0 {
				t.Fatalf("retry\n%s", retry)
			}
			var out struct {
				Workspace Workspace `json:"workspace"`
			}
			retry.decode(t, &out)
			ws := out.Workspace
			st := strings.TrimSpace(gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall"))
			br := strings.TrimSpace(gitOut(t, ws.Path, "symbolic-ref", "HEAD"))
			if st != "" || br != "refs/heads/majlis/T-1" || strings.TrimSpace(gitOut(t, ws.Path, "rev-parse", "HEAD")) != b {
				t.Errorf("workspace after the retry: status %q, branch %s", st, br)
			}
			id, _ := pathid.Lstat(ws.Path)
			inWorkspace := id.Dev == made.Dev && id.Ino == made.Ino
			l, _ = p.PoolList()
			aside := len(l.Pool) == 1 && l.Pool[0].State == wire.PoolAside
			if _, err := os.Lstat(pooled.Path); (err == nil) != aside {
				t.Errorf("pooled folder there: %v, set aside: %v", err == nil, aside)
			}
			if inWorkspace == aside || (!inWorkspace && len(l.Pool) != 1) || (inWorkspace && len(l.Pool) != 0) {
				t.Errorf("the pooled worktree is in the workspace: %v, pool: %+v", inWorkspace, l.Pool)
			}
			rep, _ = p.Doctor(t.Context())
			if aside != hasFinding(rep, FindingPoolAside) || hasFinding(rep, FindingPoolTakenUnfinished) {
				t.Errorf("doctor: %+v", rep.Findings)
			}
		})
	}
}

// TestPoolFillDrainCrash: pool fill killed at each of its steps, and
// drain killed before it removes one: a drain afterwards deletes what is
// left, a fill makes the pool whole, and nothing is left behind.
func TestPoolFillDrainCrash(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	for _, fp := range []string{"pool/claimed", "pool/added", "pool/created", "pool/drain"} {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p := newProvider(t)
			env := []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}
			if fp == "pool/drain" {
				if r := crashExec(t, bin, repo.Dir, nil, "pool", "fill"); r.exit != 0 {
					t.Fatalf("fill\n%s", r)
				}
				if r := crashExec(t, bin, repo.Dir, env, "pool", "drain"); !r.killed {
					t.Fatalf("drain not killed\n%s", r)
				}
			} else if r := crashExec(t, bin, repo.Dir, env, "pool", "fill"); !r.killed {
				t.Fatalf("fill not killed\n%s", r)
			}
			if fp != "pool/created" && fp != "pool/drain" {
				rep, _ := p.Doctor(t.Context())
				if !hasFinding(rep, FindingPoolFillInterrupted) {
					t.Errorf("doctor: %+v", rep.Findings)
				}
			}
			if r := crashExec(t, bin, repo.Dir, nil, "pool", "drain", "--json"); r.exit != 0 || strings.Contains(r.stdout, `"left": [
    {`) {
				t.Fatalf("drain after the crash\n%s", r)
			}
			if n := worktreeCount(t, repo); n != 1 {
				t.Errorf("%d worktrees after the drain", n)
			}
			if r := crashExec(t, bin, repo.Dir, nil, "pool", "fill", "--size", "1"); r.exit != 0 {
				t.Fatalf("fill again\n%s", r)
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady {
				t.Errorf("pool: %+v", l)
			}
			if rep, _ := p.Doctor(t.Context()); !rep.OK {
				t.Errorf("doctor: %+v", rep.Findings)
			}
		})
	}
}
