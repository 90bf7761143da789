package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// recyclePoints are the failpoints a purge that recycles a kept trash
// into the pool passes, in order (purge/started lies between the claim
// and the rename).
var recyclePoints = []string{"pool/recycle-claimed", "purge/started", "pool/recycle-moved", "pool/recycle-dropped",
	"pool/recycle-entry", "pool/recycle-cleaned", "pool/recycle-ready"}

// TestRecycleCrash: the purge (majlis gc --purge-due, failpoints build)
// killed with SIGKILL at every step of a recycling. Then the folder of
// the kept trash is in exactly one place (its trash folder, the pool's
// folder, or deleted), git's old entry is gone only when the salvage is
// there, doctor names what is unfinished with what to run; the next
// purge (and a drain of what a dead claim left) finishes: the folder is
// a ready, clean pooled worktree or deleted, nothing else is left in the
// workspace root or git's worktrees, doctor is clean, and the salvage
// restores the task's work.
func TestRecycleCrash(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, fp := range recyclePoints {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			recycleCrashAt(t, bin, fp)
		})
	}
}

func recycleCrashAt(t *testing.T, bin, fp string) {
	repo, p := peerProvider(t)
	if err := p.setPoolPolicy(PolicyPoolSize, "1"); err != nil {
		t.Fatal(err)
	}
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	before := observe(t, &fixtures.Repo{T: t, Dir: w.Path}, nil)
	delete(before.view, "file build/out.o") // ignored: no salvage keeps it
	reach := reachable(t, repo)
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, KeepTrash: 1}); err != nil {
		t.Fatal(err)
	}
	rec, _ := p.claimOf("T-1", 1)
	mv, made := rec.Events[EventMoved], createdIdentity(rec)
	ttl := []string{envvar.ReservationTTL + "=2s"}
	crash := crashExec(t, bin, repo.Dir, append(ttl, "MAJLIS_FAILPOINTS="+fp+"=crash"), "gc", "--purge-due", "--json")
	if !crash.killed {
		t.Fatalf("the purge was not killed at %s\n%s", fp, crash)
	}
	held, err := p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, held.ExpiresAt)

	// Right after the crash: in exactly one place, accounted for.
	places := folderPlaces(t, p, mv.TrashPath, made.Dev, made.Ino)
	if len(places) != 1 {
		t.Fatalf("the kept trash's folder is in %v after a crash at %s", places, fp)
	}
	if _, err := os.Lstat(mv.AdminEntry); os.IsNotExist(err) {
		rec, _ = p.claimOf("T-1", 1)
		if len(salvagesOf(rec)) == 0 {
			t.Errorf("git's old entry is gone and no salvage is named")
		}
	}
	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the crash at %s: the folder is at %s; doctor: %+v", fp, places[0], rep.Findings)
	inPool := strings.Contains(places[0], poolFolderPrefix)
	ready := false
	if l, _ := p.PoolList(); len(l.Pool) == 1 && l.Pool[0].State == wire.PoolReady {
		ready = true
	}
	if inPool && !ready && !hasFinding(rep, FindingPoolRecycleInterrupted) {
		t.Errorf("doctor names no interrupted recycling: %+v", rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Code == FindingTrashHalfPurged && !strings.Contains(f.Message, "recycling it into the pool") {
			t.Errorf("doctor says of a trash being recycled: %s", f.Message)
		}
	}

	// A drain first, as a user told by doctor of a pooled worktree might:
	// it leaves what is not clean and majlis's, deletes what is.
	if r := crashExec(t, bin, repo.Dir, ttl, "pool", "drain", "--keep", "1", "--json"); r.exit != 0 {
		t.Fatalf("drain after the crash\n%s", r)
	}
	if places := folderPlaces(t, p, mv.TrashPath, made.Dev, made.Ino); len(places) != 1 {
		t.Fatalf("after the drain, the kept trash's folder is in %v", places)
	}
	retry := crashExec(t, bin, repo.Dir, ttl, "gc", "--purge-due", "--json")
	if retry.exit != 0 {
		t.Fatalf("retry\n%s", retry)
	}
	if r := crashExec(t, bin, repo.Dir, nil, "pool", "drain", "--keep", "1", "--json"); r.exit != 0 {
		t.Fatalf("drain\n%s", r)
	}
	t.Logf("the retry: %s", retry.stdout)
	recycleCheckSettled(t, repo, p, made.Dev, made.Ino)
	purgeCheckReachable(t, repo, reach)
	rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.view, observe(t, &fixtures.Repo{T: t, Dir: rr.Workspace.Path}, nil).view); diff != "" {
		t.Errorf("restored from the salvage (-the workspace +restored):\n%s", diff)
	}
}

// folderPlaces lists where the directory dev:ino is: its trash folder,
// a pool folder, or nowhere (["deleted"]).
func folderPlaces(t *testing.T, p *Provider, trash string, dev, ino uint64) []string {
	t.Helper()
	var out []string
	candidates, _ := filepath.Glob(filepath.Join(p.reg.WorkspaceRoot, poolFolderPrefix+"*")) // and drains' aside paths
	for _, c := range append(candidates, trash) {
		if id, err := pathid.Lstat(c); err == nil && id.Dev == dev && id.Ino == ino {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = append(out, "deleted")
	}
	return out
}

// recycleCheckSettled checks the end state of a recycling, however it
// went: the folder dev:ino is the one ready, clean pooled worktree, or
// deleted; nothing else is in the workspace root, git's worktrees folder
// or majlis's trash; doctor is clean; a ready one is handed out clean.
func recycleCheckSettled(t *testing.T, repo *fixtures.Repo, p *Provider, dev, ino uint64) {
	t.Helper()
	l, err := p.PoolList()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, w := range l.Pool {
		if w.State != wire.PoolReady {
			t.Errorf("pooled worktree %s is %s", w.Name, w.State)
			continue
		}
		want = append(want, filepath.Base(w.Path))
		if id, _ := pathid.Lstat(w.Path); id.Dev != dev || id.Ino != ino {
			t.Errorf("the ready pooled worktree %s is not the kept trash's folder", w.Path)
		}
	}
	if len(want) > 1 {
		t.Errorf("pool: %+v", l.Pool)
	}
	var root []string
	entries, _ := os.ReadDir(p.reg.WorkspaceRoot)
	for _, e := range entries {
		root = append(root, e.Name())
	}
	if strings.Join(root, " ") != strings.Join(want, " ") {
		t.Errorf("the workspace root holds %v, want %v", root, want)
	}
	if n := worktreeCount(t, repo); n != 1+len(want) {
		t.Errorf("git lists %d worktrees:\n%s", n, repo.Git("worktree", "list", "--porcelain"))
	}
	if left := trashLeft(t, p); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("doctor: %+v, %v", rep.Findings, err)
	}
	if len(want) == 1 {
		ws := mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
		if ws.Pool == nil || !ws.Pool.Used {
			t.Errorf("the recycled worktree was not handed out: %+v", ws.Pool)
		}
		if st := strings.TrimSpace(gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall")); st != "" {
			t.Errorf("the recycled workspace is not clean:\n%s", st)
		}
	}
}
