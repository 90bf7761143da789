package provider

// The undo window (issue 24, items 2, 3, 5 to 8): each test builds its
// state from a fresh fixture, acts, and then checks every ref,
// reflog-reachable commit, index entry and file that must survive.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// testClock is a clock a test moves forward.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// undoProvider is peerProvider with a clock the test moves: a repository
// whose HEAD tracks a .gitignore (build/, *.log, .env), README.md and
// src/app.go.
func undoProvider(t *testing.T) (*fixtures.Repo, *Provider, *testClock) {
	t.Helper()
	repo := fixtures.NewRepo(t)
	repo.WriteGitignore("build/", "*.log", ".env")
	repo.WriteFile("src/app.go", "package app\n")
	repo.Commit("gitignore and sources")
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	clk := &testClock{now: time.Now()}
	p, err := Open(t.Context(), repo.Dir, Options{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return repo, p, clk
}

// reachable lists every commit reachable from any ref or reflog of the
// repository (the index's objects too).
func reachable(t *testing.T, repo *fixtures.Repo) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, id := range strings.Fields(repo.Git("rev-list", "--all", "--reflog")) {
		out[id] = true
	}
	return out
}

// TestKeptTrashByDefault: without --keep-trash, a reclaim keeps the
// workspace in its trash folder for the policy's trash.keep (24h); the
// kept folder lets go of its branch (HEAD detached, the branch recorded),
// so that git lets another worktree check the branch out and a plain
// restore onto it goes ahead; restore --from-trash puts HEAD back on the
// branch with every file, ignored ones included.
func TestKeptTrashByDefault(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.WriteFile(".env", "SECRET=1\n")
	before := observe(t, ws, nil)
	branchTip := repo.RevParse("refs/heads/" + w.Branch)

	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if res.TrashPath == "" || res.TrashKeptUntil == nil || !res.TrashKeptUntil.Equal(clk.Now().UTC().Add(DefaultTrashKeep)) {
		t.Fatalf("result %+v: want the trash kept for %s", res, DefaultTrashKeep)
	}
	trash := &fixtures.Repo{T: t, Dir: res.TrashPath}
	if sym, err := trash.TryGit("symbolic-ref", "-q", "HEAD"); err == nil {
		t.Errorf("the kept trash holds its branch: HEAD is %s", sym)
	}
	if got := trash.Head(); got != branchTip {
		t.Errorf("the kept trash's HEAD is %s, want the branch's commit %s", got, branchTip)
	}
	if wts := repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, "branch refs/heads/"+w.Branch) {
		t.Errorf("git still lists the branch as checked out:\n%s", wts)
	}
	// git lets another worktree take the branch, and give it back.
	other := filepath.Join(fixtures.TempDir(t), "other")
	repo.Git("worktree", "add", "-q", other, w.Branch)
	repo.Git("worktree", "remove", other)

	kept, err := p.KeptTrash(t.Context())
	if err != nil || len(kept) != 1 || kept[0].Path != res.TrashPath || kept[0].Due != "" || kept[0].SizeBytes <= 0 ||
		kept[0].Branch != "refs/heads/"+w.Branch {
		t.Fatalf("kept trash: %+v, %v", kept, err)
	}
	list, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(list) != 1 || list[0].TrashPath != res.TrashPath || list[0].TrashSizeBytes == nil || *list[0].TrashSizeBytes <= 0 {
		t.Fatalf("list --all: %+v, %v", list, err)
	}
	rep, err := p.Doctor(t.Context())
	if err != nil || len(rep.Trash) != 1 || rep.Trash[0].Path != res.TrashPath || !rep.OK {
		t.Fatalf("doctor: %+v, %v", rep, err)
	}
	plan, err := p.PreviewGC(t.Context(), GCOptions{})
	if err != nil || len(plan.TrashKept) != 1 || len(plan.Trash) != 0 {
		t.Fatalf("gc preview: %+v, %v", plan, err)
	}
	// Nothing is due within the day.
	clk.Add(DefaultTrashKeep - time.Minute)
	if purged, err := p.PurgeDue(t.Context()); err != nil || len(purged.Purged)+len(purged.Left) != 0 {
		t.Fatalf("purge within the window: %+v, %v", purged, err)
	}

	restored, err := p.RestoreFromTrash(t.Context(), "T-1", "undo")
	if err != nil {
		t.Fatalf("restore --from-trash: %v", err)
	}
	if restored.Branch != w.Branch || restored.DetachedFrom != "" {
		t.Errorf("restored on branch %q (detached from %q), want %s", restored.Branch, restored.DetachedFrom, w.Branch)
	}
	after := observe(t, ws, nil)
	if diff := cmp.Diff(before.view, after.view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
	if got := ws.ReadFile(".env"); got != "SECRET=1\n" {
		t.Errorf("the ignored .env came back as %q", got)
	}
}

// TestPurgeSalvagesAKeptTrashSomeoneUsed (item 2): a kept trash folder
// someone opened, edited, staged in, committed in (on its detached HEAD)
// and gave a per-worktree ref; once its time is up, the purge salvages
// all of it before it deletes anything, records that it started, and a
// restore of that salvage gives it all back. An untouched kept trash
// makes no new salvage.
func TestPurgeSalvagesAKeptTrashSomeoneUsed(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	used := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, used.Path)
	untouched := mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
	peerDirty(t, untouched.Path)
	r1, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-2", Yes: true})
	if err != nil {
		t.Fatal(err)
	}

	trash := &fixtures.Repo{T: t, Dir: r1.TrashPath}
	trash.WriteFile("src/committed.go", "package app // committed in the trash\n")
	trash.Git("add", "src/committed.go")
	trash.Git("commit", "-q", "-m", "made in the kept trash")
	made := trash.Head()
	trash.Git("update-ref", "refs/worktree/kept", made)
	trash.WriteFile("README.md", "# edited in the trash\n")
	trash.WriteFile("src/staged-later.go", "package app // staged in the trash\n")
	trash.Git("add", "src/staged-later.go")
	trash.WriteFile("later.txt", "untracked, written in the trash\n")
	before := observe(t, trash, nil)
	reach := reachable(t, repo)
	for _, id := range []string{made} {
		if !reach[id] {
			t.Fatalf("commit %s is not reachable before the purge", id)
		}
	}

	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Purged) != 2 || len(purged.Left) != 0 {
		t.Fatalf("purge: %+v", purged)
	}
	by := map[string]PurgedTrash{}
	for _, pt := range purged.Purged {
		by[pt.Binding] = pt
	}
	if by["T-2"].SalvageRef != "" {
		t.Errorf("the untouched kept trash got a new salvage %s", by["T-2"].SalvageRef)
	}
	ref := by["T-1"].SalvageRef
	if ref == "" || by["T-1"].Due != DueExpired {
		t.Fatalf("the used kept trash: %+v, want a new salvage", by["T-1"])
	}
	for _, d := range []string{r1.TrashPath, r2.TrashPath} {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	rec, err := p.claimOf("T-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pg := rec.Events[EventPurging]; pg == nil || pg.SalvageRef != ref || pg.Reason != DueExpired {
		t.Errorf("purging event %+v, want one naming %s", pg, ref)
	}
	if pd := rec.Events[EventPurged]; pd == nil || pd.SalvageRef != ref {
		t.Errorf("purged event %+v", pd)
	}
	after := reachable(t, repo)
	for id := range reach {
		if !after[id] {
			t.Errorf("commit %s was reachable before the purge, not after", id)
		}
	}
	// The salvage gives it all back.
	res, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatalf("restore of %s: %v", ref, err)
	}
	if res.SalvageRef != ref {
		t.Errorf("restored %s, want %s", res.SalvageRef, ref)
	}
	got := observe(t, &fixtures.Repo{T: t, Dir: res.Workspace.Path}, nil)
	delete(before.view, "file build/out.o") // ignored: the trash kept it, no salvage does
	if diff := cmp.Diff(before.view, got.view); diff != "" {
		t.Errorf("the restored salvage differs from the trash before its purge (-before +after):\n%s", diff)
	}
	if out, err := repo.TryGit("fsck", "--no-progress", "--connectivity-only"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// TestPurgeWhoseSalvageFailsDeletesNothing (item 2): a kept trash whose
// snapshot fails (its index is garbage) is not deleted: the purge leaves
// it whole, says why, and records no purge; once it can be salvaged, the
// next purge goes ahead.
func TestPurgeWhoseSalvageFailsDeletesNothing(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	trash := &fixtures.Repo{T: t, Dir: res.TrashPath}
	index := filepath.Join(trash.GitDir(), "index")
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(index, []byte("not an index\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := crashCaptureFiles(t, res.TrashPath)
	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(purged.Purged) != 0 || len(purged.Left) != 1 || !strings.Contains(purged.Left[0].Reason, "nothing was deleted") {
		t.Fatalf("purge: %+v, want the trash left, saying nothing was deleted", purged)
	}
	if diff := cmp.Diff(files, crashCaptureFiles(t, res.TrashPath)); diff != "" {
		t.Errorf("the trash folder changed (-before +after):\n%s", diff)
	}
	if rec, _ := p.claimOf("T-1", 1); rec.has(EventPurging) || rec.has(EventPurged) {
		t.Errorf("a purge was recorded: %v", rec.Events)
	}
	if err := os.WriteFile(index, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if purged, err = p.PurgeDue(t.Context()); err != nil || len(purged.Purged) != 1 {
		t.Fatalf("purge once the trash can be salvaged: %+v, %v", purged, err)
	}
	if wts := repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, trashPrefix) {
		t.Errorf("git still lists the trash:\n%s", wts)
	}
}

// TestPurgeEarlyForSpace (item 5): kept trash beyond trash.max_bytes, or
// with the free space below trash.min_free, goes early, oldest first;
// the purge is recorded with why, and list --all shows it.
func TestPurgeEarlyForSpace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value, due string }{
		{PolicyTrashMaxBytes, "1", DueBudget},
		{PolicyTrashMinFree, "100%", DueSpace},
	} {
		t.Run(tc.due, func(t *testing.T) {
			t.Parallel()
			_, p, _ := undoProvider(t)
			for _, b := range []string{"T-1", "T-2"} {
				w := mustAllocate(t, p, AllocateOptions{Binding: b})
				peerDirty(t, w.Path)
				if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: b, Yes: true}); err != nil {
					t.Fatal(err)
				}
			}
			tp, err := p.SetTrashPolicy(tc.key, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if tp.Sources[tc.key] != SourceRepository || tp.Sources[PolicyTrashKeep] != SourceDefault {
				t.Errorf("sources %v", tp.Sources)
			}
			kept, err := p.KeptTrash(t.Context())
			if err != nil || len(kept) != 2 || kept[0].Binding != "T-1" || kept[0].Due != tc.due {
				t.Fatalf("kept trash %+v, %v: want the oldest (T-1) due for %s", kept, err, tc.due)
			}
			purged, err := p.PurgeDue(t.Context())
			if err != nil || len(purged.Purged) != 2 || purged.Purged[0].Binding != "T-1" {
				t.Fatalf("purge %+v, %v: want both, oldest first", purged, err)
			}
			list, err := p.List(t.Context(), ListOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range list {
				if w.TrashPurged != tc.due || w.TrashPurgedAt == nil || w.TrashPath != "" {
					t.Errorf("%s listed with trash purged %q at %v (kept %q), want %s", w.Binding, w.TrashPurged, w.TrashPurgedAt, w.TrashPath, tc.due)
				}
			}
		})
	}
}

// TestTrashKeepPolicyZero (item 5): policy trash.keep 0 makes every
// reclaim of the repository delete its trash at once; --keep-trash D
// (KeepTrash) overrides it for one call, and --keep-trash 0 (DeleteTrash)
// the default for one call.
func TestTrashKeepPolicyZero(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	for _, b := range []string{"T-1", "T-2", "T-3"} {
		mustAllocate(t, p, AllocateOptions{Binding: b})
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
	if err != nil || res.TrashPath != "" || !slicesEqual(res.StepsDone, "move", "delete-trash") {
		t.Fatalf("reclaim --keep-trash 0 under the default policy: %+v, %v", res, err)
	}
	if _, err := p.SetTrashPolicy(PolicyTrashKeep, "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SetTrashPolicy(PolicyTrashKeep, "soon"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("trash.keep soon: %v, want ErrInvalidArgument", err)
	}
	res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-2", Yes: true})
	if err != nil || res.TrashPath != "" {
		t.Fatalf("reclaim under trash.keep 0: %+v, %v", res, err)
	}
	res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-3", Yes: true, KeepTrash: time.Hour})
	if err != nil || res.TrashPath == "" {
		t.Fatalf("reclaim --keep-trash 1h under trash.keep 0: %+v, %v", res, err)
	}
	view, err := p.Policy(t.Context())
	if err != nil || view.TrashKeep != "0" || view.Sources[PolicyTrashKeep] != SourceRepository || view.Sources[PolicyTrashMaxBytes] != SourceDefault {
		t.Errorf("policy %+v, %v", view, err)
	}
}

func slicesEqual(got []string, want ...string) bool {
	if len(got) < len(want) {
		return false
	}
	return cmp.Equal(got[len(got)-len(want):], want)
}

// TestEndReclaimIgnoredFiles (item 3): end --reclaim of a workspace that
// holds nothing to salvage but ignored files (an .env, a local database
// under build/) reclaims it only while the trash is kept, and says so;
// with trash.keep 0 it leaves the workspace, and says why.
func TestEndReclaimIgnoredFiles(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	for _, b := range []string{"T-1", "T-2"} {
		w := mustAllocate(t, p, AllocateOptions{Binding: b})
		ws := &fixtures.Repo{T: t, Dir: w.Path}
		ws.WriteFile(".env", "SECRET="+b+"\n")
		ws.WriteFile("build/local.db", "rows of "+b+"\n")
	}
	res, err := p.End(t.Context(), EndOptions{Binding: "T-1", Reclaim: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reclaimed == nil || res.Ignored != IgnoredKept || res.Reclaimed.TrashPath == "" {
		t.Fatalf("end --reclaim: %+v (not reclaimed: %v)", res, res.NotReclaimed)
	}
	if b, err := os.ReadFile(filepath.Join(res.Reclaimed.TrashPath, "build", "local.db")); err != nil || string(b) != "rows of T-1\n" {
		t.Errorf("the ignored database in the kept trash: %q, %v", b, err)
	}

	if _, err := p.SetTrashPolicy(PolicyTrashKeep, "0"); err != nil {
		t.Fatal(err)
	}
	res, err = p.End(t.Context(), EndOptions{Binding: "T-2", Reclaim: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reclaimed != nil || res.Ignored != IgnoredLeft || res.NotReclaimed == nil || !strings.Contains(res.NotReclaimed.Error(), ".env") {
		t.Fatalf("end --reclaim under trash.keep 0: %+v (not reclaimed: %v)", res, res.NotReclaimed)
	}
	ws := &fixtures.Repo{T: t, Dir: res.Workspace.Path}
	if ws.ReadFile(".env") != "SECRET=T-2\n" || ws.ReadFile("build/local.db") != "rows of T-2\n" {
		t.Errorf("the ignored files of T-2 changed")
	}
}

// TestRestoreFromTrashBranchMoved (item 8): the branch of a kept trash
// moved since the reclaim (a commit made on it elsewhere): restore
// --from-trash puts the workspace back on a detached HEAD at the commit
// it was on, with its files and index as they were (no revert staged),
// names the branch, and leaves the branch where it is.
func TestRestoreFromTrashBranchMoved(t *testing.T) {
	t.Parallel()
	repo, p, _ := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	before := observe(t, ws, nil)
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatal(err)
	}
	elsewhere := &fixtures.Repo{T: t, Dir: filepath.Join(fixtures.TempDir(t), "elsewhere")}
	repo.Git("worktree", "add", "-q", elsewhere.Dir, w.Branch)
	elsewhere.WriteFile("moved.txt", "a commit made on the branch elsewhere\n")
	moved := elsewhere.Commit("moved the branch")
	repo.Git("worktree", "remove", elsewhere.Dir)

	restored, err := p.RestoreFromTrash(t.Context(), "T-1", "undo")
	if err != nil {
		t.Fatalf("restore --from-trash: %v", err)
	}
	if restored.Branch != "" || restored.DetachedFrom != w.Branch {
		t.Errorf("restored on %q, detached from %q; want a detached HEAD naming %s", restored.Branch, restored.DetachedFrom, w.Branch)
	}
	after := observe(t, ws, nil)
	want := before.view
	want["HEAD symbolic"] = "detached"
	if diff := cmp.Diff(want, after.view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
	if got := repo.RevParse("refs/heads/" + w.Branch); got != moved {
		t.Errorf("the branch is at %s, want %s (never moved by the restore)", got, moved)
	}
	// It reclaims again as any detached workspace does.
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatalf("reclaim of the restored workspace: %v", err)
	}
}

// TestRestoreFromTrashAfterRefusedRestore (item 7): a plain restore that
// git refuses (its branch is checked out in another worktree) leaves no
// live claim behind; restore --from-trash then finds the kept trash of
// the binding's earlier claim.
func TestRestoreFromTrashAfterRefusedRestore(t *testing.T) {
	t.Parallel()
	repo, p, _ := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	before := observe(t, ws, nil)
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatal(err)
	}
	other := &fixtures.Repo{T: t, Dir: filepath.Join(fixtures.TempDir(t), "other")}
	repo.Git("worktree", "add", "-q", other.Dir, w.Branch)
	worktrees := repo.Git("worktree", "list", "--porcelain")
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err == nil {
		t.Fatal("a restore onto a branch checked out elsewhere went ahead")
	}
	if got := repo.Git("worktree", "list", "--porcelain"); got != worktrees {
		t.Errorf("the refused restore changed the worktrees:\n%s\nwant\n%s", got, worktrees)
	}
	recs, err := p.records.Binding("T-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.live() {
			t.Errorf("the refused restore left claim #%d live", r.Claim.Seq)
		}
	}
	repo.Git("worktree", "remove", other.Dir)
	restored, err := p.RestoreFromTrash(t.Context(), "T-1", "undo")
	if err != nil {
		t.Fatalf("restore --from-trash after the refused restore: %v", err)
	}
	if restored.Branch != w.Branch {
		t.Errorf("restored on %q, want %s", restored.Branch, w.Branch)
	}
	if diff := cmp.Diff(before.view, observe(t, ws, nil).view); diff != "" {
		t.Errorf("restored workspace differs (-before +after):\n%s", diff)
	}
}

// TestNestedTrashIsNotKept: a workspace inside another one (allocated
// with AllowNested) gets its trash folder beside it, inside the outer
// one: such a trash is deleted at once (and the result says why), so
// that the outer workspace can be reclaimed next.
func TestNestedTrashIsNotKept(t *testing.T) {
	t.Parallel()
	_, p, _ := undoProvider(t)
	outer := mustAllocate(t, p, AllocateOptions{Binding: "O"})
	(&fixtures.Repo{T: t, Dir: outer.Path}).WriteFile(".gitignore", "inner/\n")
	inner := mustAllocate(t, p, AllocateOptions{Binding: "I", Path: filepath.Join(outer.Path, "inner", "I"), AllowNested: true})
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "I", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.TrashPath != "" || res.TrashNotKept == "" {
		t.Errorf("the inner workspace's trash: kept at %q (not kept: %q)", res.TrashPath, res.TrashNotKept)
	}
	if left := trashLeft(t, p, filepath.Dir(inner.Path)); len(left) > 0 {
		t.Errorf("trash left inside the outer workspace: %v", left)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "O", Yes: true}); err != nil {
		t.Fatalf("reclaim of the outer workspace: %v", err)
	}
}

// TestPurgeOnAFullDiskDeletesNothing (item 2): on a file system with no
// space left, the purge's salvage cannot be written: the purge deletes
// nothing and says so; once there is space, it goes ahead. Needs the
// right to mount a tmpfs; skipped otherwise.
func TestPurgeOnAFullDiskDeletesNothing(t *testing.T) {
	t.Parallel()
	mnt := filepath.Join(fixtures.TempDir(t), "small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	repo := fixtures.InitRepo(t, filepath.Join(mnt, "app"))
	repo.WriteGitignore("build/")
	repo.Commit("gitignore")
	if _, err := Init(t.Context(), repo.Dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, KeepTrash: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	trash := &fixtures.Repo{T: t, Dir: res.TrashPath}
	trash.WriteFile("written-after.txt", "made in the kept trash, not salvaged yet\n")
	files := crashCaptureFiles(t, res.TrashPath)
	// Fill the file system.
	freeBefore, _, err := gitops.FreeSpace(mnt)
	if err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatalf("purge on a full disk: %v", err)
	}
	if len(purged.Purged) != 0 || len(purged.Left) != 1 || !strings.Contains(purged.Left[0].Reason, "nothing was deleted") {
		t.Fatalf("purge on a full disk: %+v, want the trash left, saying nothing was deleted", purged)
	}
	if diff := cmp.Diff(files, crashCaptureFiles(t, res.TrashPath)); diff != "" {
		t.Errorf("the trash folder changed on a full disk (-before +after):\n%s", diff)
	}
	if rec, _ := p.claimOf("T-1", 1); rec.has(EventPurging) || rec.has(EventPurged) {
		t.Errorf("a purge was recorded: %v", rec.Events)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The space comes back once no process holds the filler open: a
	// child another test forked meanwhile may hold it until it execs.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if free, _, err := gitops.FreeSpace(mnt); err == nil && free >= freeBefore/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file system at %s has no space back a minute after the filler was removed", mnt)
		}
	}
	purged, err = p.PurgeDue(t.Context())
	if err != nil || len(purged.Purged) != 1 || purged.Purged[0].SalvageRef == "" {
		t.Fatalf("purge once there is space: %+v, %v", purged, err)
	}
	if got := repo.Git("show", purged.Purged[0].SalvageRef+":written-after.txt"); got != "made in the kept trash, not salvaged yet\n" {
		t.Errorf("the purge's salvage holds %q", got)
	}
}

// TestPurgeKeptEntry: a workspace whose folder was deleted by hand has
// git's entry kept aside for the undo window (entryaside.go); its purge
// salvages the entry again first, then deletes it, and every commit it
// held stays reachable.
func TestPurgeKeptEntry(t *testing.T) {
	t.Parallel()
	repo, p, clk := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	s := makeEntryHeld(t, ws, w.Branch)
	if err := os.RemoveAll(w.Path); err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	aside := p.entryAsidePath(&mustReadBinding(t, p, "T-1")[0].Claim)
	kept, err := p.KeptTrash(t.Context())
	if err != nil || len(kept) != 1 || !kept[0].Entry || kept[0].Path != aside || kept[0].Due != "" {
		t.Fatalf("kept trash: %+v, %v (result %+v)", kept, err, res)
	}
	if _, err := p.RestoreFromTrash(t.Context(), "T-1", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("restore --from-trash of an entry alone: %v, want ErrNotFound (no folder to give back)", err)
	}
	keptEntryShown(t, p, aside)
	reach := reachable(t, repo)
	clk.Add(DefaultTrashKeep + time.Second)
	purged, err := p.PurgeDue(t.Context())
	if err != nil || len(purged.Purged) != 1 || purged.Purged[0].Path != aside {
		t.Fatalf("purge: %+v, %v", purged, err)
	}
	if _, err := os.Lstat(aside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry kept aside is still there: %v", err)
	}
	if r, _ := p.claimOf("T-1", 1); !r.has(EventPurging) || !r.has(EventPurged) {
		t.Errorf("purge not recorded: %v", r.Events)
	}
	if ws, err := p.List(t.Context(), ListOptions{All: true}); err != nil || len(ws) != 1 || ws[0].TrashEntry != "" || ws[0].TrashPurged != DueExpired {
		t.Errorf("list --all after the purge: %+v, %v", ws, err)
	}
	after := reachable(t, repo)
	for id := range reach {
		if !after[id] {
			t.Errorf("commit %s was reachable before the purge, not after", id)
		}
	}
	s.mustSurvive(t, repo)
}

// keptEntryShown: git's entry kept aside for the undo window is shown as
// kept trash, with its age and size, by list --all, gc --preview and
// doctor.
func keptEntryShown(t *testing.T, p *Provider, aside string) {
	t.Helper()
	ws, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(ws) != 1 {
		t.Fatalf("list --all: %+v, %v", ws, err)
	}
	if w := ws[0]; w.TrashEntry != aside || w.TrashPath != "" || w.TrashKeptUntil == nil || w.TrashSizeBytes == nil || *w.TrashSizeBytes <= 0 {
		t.Errorf("list --all shows the kept entry as %+v, want trash_entry %s with its time and size", w, aside)
	}
	isEntry := func(k []KeptTrash) bool {
		return len(k) == 1 && k[0].Entry && k[0].Path == aside && k[0].SizeBytes > 0 && k[0].Age != "" && !k[0].KeptUntil.IsZero()
	}
	plan, err := p.PreviewGC(t.Context(), GCOptions{})
	if err != nil || !isEntry(plan.TrashKept) {
		t.Errorf("gc --preview's kept trash: %+v, %v", plan, err)
	}
	rep, err := p.Doctor(t.Context())
	if err != nil || !isEntry(rep.Trash) {
		t.Errorf("doctor's kept trash: %+v, %v", rep, err)
	}
}
