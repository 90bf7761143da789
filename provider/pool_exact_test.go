package provider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// entryView is what git keeps of a worktree in its entry, with what
// differs between any two workspaces (their names, claims, times) left
// out: the names of its files, and HEAD, ORIG_HEAD, HEAD's reflog and the
// lock as they read.
func entryView(t *testing.T, ws *Workspace) string {
	t.Helper()
	gitDir := strings.TrimSpace(gitOut(t, ws.Path, "rev-parse", "--absolute-git-dir"))
	var names []string
	err := filepath.Walk(gitDir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(gitDir, path)
			names = append(names, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(gitDir, name))
		return string(b)
	}
	stamp := regexp.MustCompile(`> [0-9]+ [-+][0-9]{4}`)
	view := fmt.Sprintf("files %v\nHEAD %sORIG_HEAD %sreflog %s\nlocked %q", names, read("HEAD"), read("ORIG_HEAD"),
		stamp.ReplaceAllString(read("logs/HEAD"), "> TIME"), read("locked"))
	return strings.ReplaceAll(strings.ReplaceAll(view, ws.Binding, "BINDING"), shortDigest(ws.ClaimDigest), "CLAIM")
}

// modes lists every path under dir (but .git) with its type and mode.
func modes(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, path); rel != ".git" && rel != "." {
			out = append(out, rel+" "+fi.Mode().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// TestPoolHandOutIsWorktreeAdd: a workspace handed out from the pool is
// what git worktree add makes, beyond its files: git's entry holds the
// same files, HEAD's reflog and ORIG_HEAD are those of a worktree just
// added (not the pooled worktree's base and time), files whose
// attributes changed between the two bases are written as a checkout
// writes them (end of line), modes and links are the same, and
// post-checkout runs with git's environment (no GIT_DIR, GIT_WORK_TREE
// or majlis's settings).
func TestPoolHandOutIsWorktreeAdd(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	repo.WriteFile("t.txt", "a\nb\n")
	repo.WriteFile("d/f", "f\n")
	a := repo.Commit("A")
	repo.WriteFile(".gitattributes", "*.txt text eol=crlf\n")
	repo.Remove("d/f")
	if err := os.Remove(repo.Path("d")); err != nil {
		t.Fatal(err)
	}
	repo.WriteFile("d", "a file now\n")
	repo.WriteExecutable("run.sh", "#!/bin/sh\n")
	repo.Symlink("t.txt", "link")
	b := repo.Commit("B")
	if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1, Base: a}); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	repo.WriteExecutable(".git/hooks/post-checkout",
		"#!/bin/sh\nenv | grep -E '^GIT_(DIR|WORK_TREE|CONFIG_PARAMETERS|CEILING_DIRECTORIES)=' > "+logs+"/$(basename \"$PWD\") || :\n")
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if !ws.Pool.Used {
		t.Fatalf("not from the pool: %+v", ws.Pool)
	}
	fresh := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b, NoPool: true})
	if got, want := fmt.Sprint(treeFiles(t, ws.Path)), fmt.Sprint(treeFiles(t, fresh.Path)); got != want {
		t.Errorf("files differ:\npool  %s\nfresh %s", got, want)
	}
	if got, want := modes(t, ws.Path), modes(t, fresh.Path); got != want {
		t.Errorf("modes differ:\npool\n%s\nfresh\n%s", got, want)
	}
	if got, want := entryView(t, ws), entryView(t, fresh); got != want {
		t.Errorf("git's entry differs:\npool\n%s\nfresh\n%s", got, want)
	}
	for _, w := range []*Workspace{ws, fresh} {
		if st := gitOut(t, w.Path, "status", "--porcelain", "--ignored", "-uall"); st != "" {
			t.Errorf("%s: status %q", w.Binding, st)
		}
		if env, err := os.ReadFile(filepath.Join(logs, w.Binding)); err != nil || len(env) != 0 {
			t.Errorf("%s: the hook ran with %q (%v)", w.Binding, env, err)
		}
	}
}

// TestPoolEntryTamperedNeverHandedOut: a pooled worktree whose git entry
// holds what a new worktree does not (per-worktree config aiming git at
// the main worktree, a per-worktree ref, a commit made there and left)
// is never handed out, and a drain leaves it: the commit stays
// reachable.
func TestPoolEntryTamperedNeverHandedOut(t *testing.T) {
	t.Parallel()
	cases := map[string]func(pool *fixtures.Repo, main *fixtures.Repo) string{
		"per-worktree config": func(pool, main *fixtures.Repo) string {
			pool.SetWorktreeConfig("core.worktree", main.Dir)
			return ""
		},
		"per-worktree ref": func(pool, _ *fixtures.Repo) string {
			base := pool.Head()
			c := pool.WorktreeRefCommit(base, "refs/worktree/keep", "kept.txt", "work\n")
			pool.Git("checkout", "--quiet", "--detach", base)
			return c
		},
		"commit left in the reflog": func(pool, _ *fixtures.Repo) string {
			base := pool.Head()
			c := pool.ReflogOnlyCommit(base, "kept.txt", "work\n")
			pool.Git("checkout", "--quiet", "--detach", base)
			return c
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo, p, _, b := poolScene(t, 1)
			l, err := p.PoolList()
			if err != nil {
				t.Fatal(err)
			}
			pool := &fixtures.Repo{T: t, Dir: l.Pool[0].Path}
			commit := tamper(pool, repo)
			if commit != "" {
				// What git keeps of the commit's message is not what
				// tells: the reflog (and the ref) are.
				gitDir := strings.TrimSpace(gitOut(t, pool.Dir, "rev-parse", "--absolute-git-dir"))
				if err := os.Remove(filepath.Join(gitDir, "COMMIT_EDITMSG")); err != nil {
					t.Fatal(err)
				}
			}
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
			if ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
				t.Errorf("pool use %+v, want checks_failed", ws.Pool)
			}
			if top := strings.TrimSpace(gitOut(t, ws.Path, "rev-parse", "--show-toplevel")); top != ws.Path {
				t.Errorf("git in the workspace acts on %s", top)
			}
			res, err := p.PoolDrain(t.Context(), PoolDrainOptions{})
			if err != nil || len(res.Drained) != 0 || len(res.Left) != 1 {
				t.Errorf("drain: %+v, %v", res, err)
			}
			if commit != "" {
				if out := gitOut(t, pool.Dir, "reflog", "--format=%H"); !strings.Contains(out, commit) {
					t.Errorf("commit %s is no longer in the pooled worktree's reflog:\n%s", commit, out)
				}
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside {
				t.Errorf("pool after: %+v", l.Pool)
			}
		})
	}
}

// TestPoolInUseNeverHandedOut: a pooled worktree some process uses (a
// shell left in it) is never handed out: that process would follow the
// rename and write into the task's workspace. It is set aside, naming
// the process, and the process stays where it was.
func TestPoolInUseNeverHandedOut(t *testing.T) {
	t.Parallel()
	_, p, _, b := poolScene(t, 1)
	l, err := p.PoolList()
	if err != nil {
		t.Fatal(err)
	}
	pool := l.Pool[0].Path
	shell := exec.Command("sleep", "600")
	shell.Dir = filepath.Join(pool, "d0")
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shell.Process.Kill(); _ = shell.Wait() }()
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
		t.Errorf("pool use %+v, want checks_failed", ws.Pool)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", shell.Process.Pid)); err != nil || cwd != filepath.Join(pool, "d0") {
		t.Errorf("the shell's directory is %q (%v)", cwd, err)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside ||
		!strings.Contains(l.Pool[0].Reason, fmt.Sprintf("pid %d", shell.Process.Pid)) {
		t.Errorf("pool after: %+v", l.Pool)
	}
}

// TestPoolWorktreeSettingsFallBack: git worktree add copies the main
// worktree's own config into a new worktree; a pooled worktree would
// carry the copy of its fill's time. The allocation falls back to git
// worktree add (reason worktree_settings) and sets nothing aside.
func TestPoolWorktreeSettingsFallBack(t *testing.T) {
	t.Parallel()
	repo, p, _, b := poolScene(t, 1)
	repo.SetWorktreeConfig("user.name", "main's own")
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if ws.Pool.Used || ws.Pool.Reason != "worktree_settings" {
		t.Errorf("pool use %+v, want worktree_settings", ws.Pool)
	}
	if got := strings.TrimSpace(gitOut(t, ws.Path, "config", "--worktree", "user.name")); got != "main's own" {
		t.Errorf("the workspace's own config: %q", got)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady {
		t.Errorf("pool after: %+v", l.Pool)
	}
}

// TestPoolReplayNamesThePool: a retry with the request id of an
// allocation answers as the first one did about the pool: the pooled
// worktree it took, or (not recorded) reason "replayed".
func TestPoolReplayNamesThePool(t *testing.T) {
	t.Parallel()
	_, p, _, b := poolScene(t, 1)
	first := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b, RequestID: "job-1"})
	again := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b, RequestID: "job-1"})
	if !first.Pool.Used || again.Pool == nil || *again.Pool != *first.Pool {
		t.Errorf("first %+v, retry %+v", first.Pool, again.Pool)
	}
	mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b, RequestID: "job-2", NoPool: true})
	if again := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b, RequestID: "job-2", NoPool: true}); again.Pool == nil || again.Pool.Used || again.Pool.Reason != "replayed" {
		t.Errorf("retry of a plain allocation: %+v", again.Pool)
	}
}

// TestPoolFillsTogetherMakeTheSize: fills started together (the server's
// and the command's, each its own process's provider) make the pool's
// size, not a multiple of it.
func TestPoolFillsTogetherMakeTheSize(t *testing.T) {
	t.Parallel()
	repo, _ := newProvider(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, err := Open(t.Context(), repo.Dir, Options{})
			if err != nil {
				errs[i] = err
				return
			}
			defer q.Close()
			_, errs[i] = q.PoolFill(t.Context(), PoolFillOptions{Size: 2})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if l, err := p.PoolList(); err != nil || len(l.Pool) != 2 {
		t.Errorf("pool after three fills of 2: %d, %v", len(l.Pool), err)
	}
}

// TestPoolFolderGoneSetAside: a pooled worktree whose folder someone
// deleted is set aside by the allocation that meets it, which goes on
// with the next one: it does not turn the whole pool off for good.
func TestPoolFolderGoneSetAside(t *testing.T) {
	t.Parallel()
	_, p, _, b := poolScene(t, 2)
	l, err := p.PoolList()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(l.Pool[0].Path); err != nil {
		t.Fatal(err)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if !ws.Pool.Used || ws.Pool.Name != l.Pool[1].Name {
		t.Errorf("pool use %+v, want %s", ws.Pool, l.Pool[1].Name)
	}
	if after, _ := p.PoolList(); len(after.Pool) != 1 || after.Pool[0].State != wire.PoolAside {
		t.Errorf("pool after: %+v", after.Pool)
	}
}

// TestPoolCheckoutSettingsChanged: a pooled worktree made under other
// checkout settings than those in force at hand-out (end of line, the
// repository's own attributes) is never handed out: its files are not
// what git worktree add writes now.
func TestPoolCheckoutSettingsChanged(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(repo *fixtures.Repo){
		"core.autocrlf":   func(repo *fixtures.Repo) { repo.Config("core.autocrlf", "true") },
		"info/attributes": func(repo *fixtures.Repo) { repo.WriteFile(".git/info/attributes", "*.txt eol=crlf\n") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo, p, _, b := poolScene(t, 2)
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
			if !ws.Pool.Used {
				t.Fatalf("settings unchanged: %+v", ws.Pool)
			}
			if _, err := os.Stat(p.poolSettingsPath(ws.Pool.Name)); !os.IsNotExist(err) {
				t.Errorf("the record of a pooled worktree handed out stays: %v", err)
			}
			change(repo)
			ws = mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: b})
			if ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
				t.Errorf("pool use %+v, want checks_failed", ws.Pool)
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || !strings.Contains(l.Pool[0].Reason, "checkout settings") {
				t.Errorf("pool after: %+v", l.Pool)
			}
		})
	}
}

// TestPoolEntryPathIsPhysical: with the workspace root reached through a
// symbolic link, git lists a workspace handed out from the pool where it
// lists one git worktree add made: at its physical path.
func TestPoolEntryPathIsPhysical(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	real, link := t.TempDir(), filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(t.Context(), repo.Dir, InitOptions{WorkspaceRoot: filepath.Join(link, "ws")}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1}); err != nil {
		t.Fatal(err)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	fresh := mustAllocate(t, p, AllocateOptions{Binding: "T-2", NoPool: true})
	if !ws.Pool.Used {
		t.Fatalf("not from the pool: %+v", ws.Pool)
	}
	wl := repo.Git("worktree", "list", "--porcelain")
	for _, w := range []*Workspace{ws, fresh} {
		if want := "worktree " + filepath.Join(real, "ws", w.Binding) + "\n"; !strings.Contains(wl, want) {
			t.Errorf("git lists no %q:\n%s", want, wl)
		}
	}
}

// TestPoolFailedFillLeavesNoRecord: a fill that fails (here: git cannot
// make the worktree, its commit missing) leaves no record of settings
// behind; a server retrying it every half minute would pile them up.
func TestPoolFailedFillLeavesNoRecord(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	if _, err := p.fillOne(t.Context(), strings.Repeat("1", 40), "HEAD"); err == nil {
		t.Fatal("made a pooled worktree of a missing commit")
	}
	if left, _ := filepath.Glob(p.poolSettingsPath("*")); len(left) != 0 {
		t.Errorf("the failed fill's settings stay: %v", left)
	}
}

// TestPoolHiddenEditNeverHandedOut: an edit hidden in a pooled worktree
// behind an index mark (assume-unchanged, skip-worktree), which git
// status does not show, is never handed out nor deleted by a drain:
// marked after the fill, or while the fill was making it.
func TestPoolHiddenEditNeverHandedOut(t *testing.T) {
	t.Parallel()
	for _, mark := range []string{"--assume-unchanged", "--skip-worktree"} {
		for _, during := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s during fill %v", mark, during), func(t *testing.T) {
				t.Parallel()
				repo, p, _, b := poolScene(t, 1)
				var pool string
				if during {
					mustAllocate(t, p, AllocateOptions{Binding: "T-0", Base: b}) // takes the clean one
					m, err := p.fillOne(t.Context(), repo.RevParse("HEAD~1"), "HEAD~1")
					if err != nil {
						t.Fatal(err)
					}
					pool = m.rec.Claim.Path
					gitIn(t, pool, "update-index", mark, "d0/f12.txt")
					if m.stamp, err = stampOf(m.rec, m.entry, nil); err != nil {
						t.Fatal(err)
					}
					if err := p.readyPooled(t.Context(), []*pooledMade{m}, false); err != nil {
						t.Fatal(err)
					}
				} else {
					l, err := p.PoolList()
					if err != nil {
						t.Fatal(err)
					}
					pool = l.Pool[0].Path
					gitIn(t, pool, "update-index", mark, "d0/f12.txt")
				}
				hidden := writeIn(t, pool, "d0/f12.txt")
				ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
				if ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
					t.Errorf("pool use %+v, want checks_failed", ws.Pool)
				}
				if res, err := p.PoolDrain(t.Context(), PoolDrainOptions{}); err != nil || len(res.Drained) != 0 {
					t.Errorf("drain: %+v, %v", res, err)
				}
				if b, err := os.ReadFile(hidden); err != nil || string(b) != "someone's work\n" {
					t.Errorf("the hidden edit: %q, %v", b, err)
				}
			})
		}
	}
}
