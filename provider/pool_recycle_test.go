package provider

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/pathid"
	"github.com/majlis-dev/majlis/wire"
)

// recycleScene is a repository with a pool target of one, and the kept
// trash of workspace T-1 that is due (its time is up): the trash of a
// task that left every kind of per-worktree state behind (usedWorkspace).
// It returns the trash folder and what T-1 held (observe), ignored files
// aside.
func recycleScene(t *testing.T) (repo *fixtures.Repo, p *Provider, trash string, before observation) {
	t.Helper()
	repo, p, trash, before, clk := recycleSceneAt(t)
	clk.Add(DefaultTrashKeep + 1)
	return repo, p, trash, before
}

// recycleSceneAt is recycleScene with the trash not yet due, and the
// provider's clock.
func recycleSceneAt(t *testing.T) (repo *fixtures.Repo, p *Provider, trash string, before observation, clk *testClock) {
	t.Helper()
	repo, p, clk = undoProvider(t)
	for i := range 12 {
		repo.WriteFile(filepath.Join("pkg", string(rune('a'+i%3)), "f"+string(rune('0'+i))+".txt"), "v1\n")
	}
	repo.WriteFile(".gitattributes", "*.txt text\n")
	repo.Commit("more files")
	if err := p.setPoolPolicy(PolicyPoolSize, "1"); err != nil {
		t.Fatal(err)
	}
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := usedWorkspace(t, repo, w.Path)
	before = observe(t, ws, nil)
	for k := range before.view {
		if strings.HasPrefix(k, "file build/") || strings.HasSuffix(k, ".log") || k == "file .env" {
			delete(before.view, k) // ignored: no salvage keeps them
		}
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	return repo, p, res.TrashPath, before, clk
}

// usedWorkspace leaves in the workspace at dir what a task leaves: a
// commit, a stopped merge, staged and unstaged edits, untracked and
// ignored files, per-worktree config, a bisect ref, reflog entries, a
// sparse-checkout file, a skip-worktree flag, and a text file rewritten
// with CRLF line endings, which git's comparison calls unchanged.
func usedWorkspace(t *testing.T, repo *fixtures.Repo, dir string) *fixtures.Repo {
	t.Helper()
	repo.Git("branch", "other")
	repo.Git("checkout", "-q", "other")
	repo.WriteFile("src/app.go", "package app // other\n")
	repo.Commit("other side")
	repo.Git("checkout", "-q", "-")
	ws := &fixtures.Repo{T: t, Dir: dir}
	ws.WriteFile("src/app.go", "package app // task\n")
	ws.WriteFile("src/new.go", "package app // committed by the task\n")
	ws.Git("add", "-A")
	ws.Git("commit", "-q", "-m", "the task's commit")
	if _, err := ws.TryGit("merge", "-q", "--no-edit", "other"); err == nil {
		t.Fatal("the merge did not stop")
	}
	ws.WriteFile("pkg/a/f0.txt", "staged by the task\n")
	ws.Git("add", "pkg/a/f0.txt")
	ws.WriteFile("pkg/b/f1.txt", "edited, not staged\n")
	ws.WriteFile("pkg/c/f5.txt", "v1\r\n")           // git calls it unchanged (text: CRLF comes back as LF)
	anHourAgo(t, filepath.Join(dir, "pkg/c/f5.txt")) // not racily clean: git trusts its stat data
	ws.WriteFile("notes/todo.txt", "untracked\n")
	ws.WriteFile("build/out.o", "ignored build output\n")
	ws.WriteFile("run.log", "ignored log\n")
	ws.WriteFile(".env", "SECRET=1\n")
	repo.Git("config", "extensions.worktreeConfig", "true")
	ws.Git("config", "--worktree", "user.name", "the task")
	ws.Git("update-ref", "refs/bisect/bad", "HEAD")
	ws.Git("update-index", "--skip-worktree", "pkg/c/f2.txt")
	gitDir := ws.GitDir()
	if err := os.MkdirAll(filepath.Join(gitDir, "info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "info", "sparse-checkout"), []byte("/src/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// anHourAgo sets the modification time of the file at path an hour
// back: git then trusts the stat data it records for it (a file changed
// in the second its index is written is compared by content again).
func anHourAgo(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// perWorktreeState lists what of a task's git state a worktree has: its
// per-worktree config, refs, reflog, sparse-checkout file, operation
// state and index flags ("" when none).
func perWorktreeState(t *testing.T, dir string) string {
	t.Helper()
	ws := &fixtures.Repo{T: t, Dir: dir}
	gitDir := ws.GitDir()
	var found []string
	for _, f := range []string{"config.worktree", "logs/HEAD", "info/sparse-checkout", "MERGE_HEAD", "MERGE_MSG", "rebase-merge",
		"rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD", "BISECT_START", "BISECT_LOG", "refs", "sharedindex"} {
		if _, err := os.Lstat(filepath.Join(gitDir, f)); err == nil {
			if b, _ := os.ReadFile(filepath.Join(gitDir, f)); f == "logs/HEAD" && !strings.Contains(string(b), "task") {
				continue // the hand-out's own entry, not the task's
			}
			found = append(found, f)
		}
	}
	if refs := strings.TrimSpace(ws.Git("for-each-ref", "refs/bisect", "refs/worktree", "refs/rewritten")); refs != "" {
		found = append(found, refs)
	}
	for _, line := range strings.Split(ws.Git("ls-files", "-v"), "\n") {
		if line != "" && line[0] != 'H' {
			found = append(found, "index flag "+line)
		}
	}
	return strings.Join(found, "\n")
}

// TestRecycleRoundTrip: a reclaimed workspace whose kept trash is due
// goes into the pool instead of being deleted; allocated from the pool,
// it is what a fresh workspace is (same files, git status clean, none of
// the task's per-worktree state), and the salvage restores the task's
// work.
func TestRecycleRoundTrip(t *testing.T) {
	t.Parallel()
	repo, p, trash, before := recycleScene(t)
	trashID, _ := pathid.Lstat(trash)
	res, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 1 || len(res.Left) != 0 || !isPoolBinding(res.Purged[0].Recycled) {
		t.Fatalf("purge: %+v, want T-1 recycled into the pool", res)
	}
	l, err := p.PoolList()
	if err != nil || len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady || l.Pool[0].Name != res.Purged[0].Recycled {
		t.Fatalf("pool: %+v, %v", l, err)
	}
	pooled := l.Pool[0].Path
	if id, _ := pathid.Lstat(pooled); id.Dev != trashID.Dev || id.Ino != trashID.Ino {
		t.Errorf("the pooled worktree is not the trash folder, renamed")
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Errorf("the trash folder is still there: %v", err)
	}
	if st := perWorktreeState(t, pooled); st != "" {
		t.Errorf("the pooled worktree kept the task's state:\n%s", st)
	}
	head := strings.TrimSpace(repo.Git("rev-parse", "HEAD"))
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: head})
	if ws.Pool == nil || !ws.Pool.Used {
		t.Fatalf("allocate did not use the recycled worktree: %+v", ws.Pool)
	}
	fresh := mustAllocate(t, p, AllocateOptions{Binding: "T-3", Base: head, NoPool: true})
	got, want := observe(t, &fixtures.Repo{T: t, Dir: ws.Path}, nil), observe(t, &fixtures.Repo{T: t, Dir: fresh.Path}, nil)
	delete(got.view, "HEAD symbolic")
	delete(want.view, "HEAD symbolic")
	if diff := cmp.Diff(want.view, got.view); diff != "" {
		t.Errorf("recycled workspace against a fresh one (-fresh +recycled):\n%s", diff)
	}
	if st := strings.TrimSpace(gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall")); st != "" {
		t.Errorf("the recycled workspace is not clean:\n%s", st)
	}
	if st := perWorktreeState(t, ws.Path); st != "" {
		t.Errorf("the recycled workspace kept the task's state:\n%s", st)
	}
	rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	after := observe(t, &fixtures.Repo{T: t, Dir: rr.Workspace.Path}, nil)
	if diff := cmp.Diff(before.view, after.view); diff != "" {
		t.Errorf("restored from the salvage (-the task's workspace +restored):\n%s", diff)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("doctor: %+v, %v", rep, err)
	}
}

// TestRecycleOpenedIsPurged: a kept trash folder that is a live
// process's working directory is deleted by its purge, never recycled.
func TestRecycleOpenedIsPurged(t *testing.T) {
	t.Parallel()
	_, p, trash, _ := recycleScene(t)
	cmd := exec.Command("sleep", "300")
	cmd.Dir = trash
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	res, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Purged) != 1 || res.Purged[0].Recycled != "" {
		t.Fatalf("purge: %+v, want T-1 deleted, not recycled", res)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Errorf("the trash folder is still there: %v", err)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 0 {
		t.Errorf("pool: %+v", l.Pool)
	}
}

// TestRecycleRefused: a kept trash is deleted by its purge, as without a
// pool, when it goes early (space is short), when the pool is at its
// target, or when the recycled folder fails the check of a pooled
// worktree (a file in it with a second name outside: the hard link is
// left alone, the trash deleted).
func TestRecycleRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, p *Provider, trash string, clk *testClock) string{
		"early for the budget": func(t *testing.T, p *Provider, _ string, _ *testClock) string {
			if _, err := p.SetTrashPolicy(PolicyTrashMaxBytes, "1"); err != nil {
				t.Fatal(err)
			}
			return DueBudget
		},
		"pool full": func(t *testing.T, p *Provider, _ string, clk *testClock) string {
			if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1}); err != nil {
				t.Fatal(err)
			}
			clk.Add(DefaultTrashKeep + 1)
			return DueExpired
		},
		"base with submodules": func(t *testing.T, p *Provider, _ string, clk *testClock) string {
			main := &fixtures.Repo{T: t, Dir: p.main}
			main.WriteFile(".gitmodules", "[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib\n")
			main.Commit("a submodule is declared")
			clk.Add(DefaultTrashKeep + 1)
			return DueExpired
		},
		"hard link": func(t *testing.T, p *Provider, trash string, clk *testClock) string {
			outside := filepath.Join(t.TempDir(), "someone's file")
			if err := os.Link(filepath.Join(trash, "pkg", "a", "f3.txt"), outside); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if b, err := os.ReadFile(outside); err != nil || string(b) != "v1\n" {
					t.Errorf("the file outside: %q, %v", b, err)
				}
			})
			clk.Add(DefaultTrashKeep + 1)
			return DueExpired
		},
	}
	for name, setup := range cases {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			t.Parallel()
			_, p, trash, _, clk := recycleSceneAt(t)
			due := setup(t, p, trash, clk)
			before, _ := p.PoolList()
			res, err := p.PurgeDue(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Purged) != 1 || res.Purged[0].Recycled != "" || res.Purged[0].Due != due {
				t.Fatalf("purge: %+v, want T-1 deleted (%s), not recycled", res, due)
			}
			if _, err := os.Lstat(trash); !os.IsNotExist(err) {
				t.Errorf("the trash folder is still there: %v", err)
			}
			after, _ := p.PoolList()
			if len(after.Pool) != len(before.Pool) {
				t.Errorf("pool before %+v, after %+v", before.Pool, after.Pool)
			}
			if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
				t.Errorf("doctor: %+v, %v", rep.Findings, err)
			}
		})
	}
}

// TestRecycleSymlinkedFolder: a tracked folder of the kept trash replaced
// by a symbolic link to someone's folder (holding files with the tracked
// names, one with the tracked content): recycling never writes or deletes
// through it. The pooled worktree gets the real folder back; the folder
// outside is untouched.
func TestRecycleSymlinkedFolder(t *testing.T) {
	t.Parallel()
	_, p, trash, _ := recycleScene(t)
	outside := t.TempDir()
	files := map[string]string{"f0.txt": "someone's\n", "f3.txt": "v1\n", "mine.txt": "mine\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(trash, "pkg", "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(trash, "pkg", "a")); err != nil {
		t.Fatal(err)
	}
	res, err := p.PurgeDue(t.Context())
	if err != nil || len(res.Purged) != 1 {
		t.Fatalf("purge: %+v, %v", res, err)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(outside, name)); err != nil || string(b) != body {
			t.Errorf("%s outside: %q, %v, want %q", name, b, err, body)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != len(files) {
		t.Errorf("the folder outside holds %d entries, want %d", len(entries), len(files))
	}
	t.Logf("recycled: %q", res.Purged[0].Recycled)
	if name := res.Purged[0].Recycled; name != "" {
		l, _ := p.PoolList()
		if len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady {
			t.Fatalf("pool: %+v", l)
		}
		if fi, err := os.Lstat(filepath.Join(l.Pool[0].Path, "pkg", "a")); err != nil || !fi.IsDir() {
			t.Errorf("pkg/a in the pooled worktree: %v, %v", fi, err)
		}
		if st := strings.TrimSpace(gitOut(t, l.Pool[0].Path, "status", "--porcelain", "--ignored", "-uall")); st != "" {
			t.Errorf("the pooled worktree is not clean:\n%s", st)
		}
	}
}

// TestRecycleFollowedIsPurged: a process that enters the trash folder
// after the purge looked (here: right after the rename, in the pool's
// folder, as a process inside would have followed it) stops the
// recycling: the folder is deleted (it is salvaged), never published to
// the pool.
func TestRecycleFollowedIsPurged(t *testing.T) {
	t.Parallel()
	_, p, trash, _ := recycleScene(t)
	var cmd *exec.Cmd
	p.hook = func(_ context.Context, point string) {
		if point != "pool/recycle-moved" {
			return
		}
		l, _ := p.PoolList()
		if len(l.Pool) != 1 {
			t.Errorf("pool while recycling: %+v", l.Pool)
			return
		}
		cmd = exec.Command("sleep", "300")
		cmd.Dir = l.Pool[0].Path
		if err := cmd.Start(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	res, err := p.PurgeDue(t.Context())
	p.hook = nil
	if err != nil || cmd == nil {
		t.Fatalf("purge: %+v, %v (the hook ran: %v)", res, err, cmd != nil)
	}
	if len(res.Purged) != 1 || res.Purged[0].Recycled != "" {
		t.Fatalf("purge: %+v, want T-1 deleted, not recycled", res)
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Errorf("the trash folder is still there: %v", err)
	}
	l, _ := p.PoolList()
	if len(l.Pool) != 0 {
		t.Errorf("pool: %+v", l.Pool)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("doctor: %+v, %v", rep.Findings, err)
	}
}
