package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// keptScene is a repository whose .gitignore ignores node_modules and
// *.log, with a tracked folder vendor/ (its *.o ignored), pool.keep_ignored
// set to kept, and one pooled worktree at base A; B is ten files away.
func keptScene(t *testing.T, kept string) (repo *fixtures.Repo, p *Provider, pool, b string) {
	t.Helper()
	repo, p = newProvider(t)
	for i := range 20 {
		repo.WriteFile(fmt.Sprintf("d%d/f%d.txt", i%4, i), fmt.Sprintf("v1 %d\n", i))
	}
	repo.WriteFile("vendor/lib.txt", "vendored\n")
	repo.WriteGitignore("node_modules", "*.log", "vendor/*.o")
	a := repo.Commit("A")
	for i := range 10 {
		repo.WriteFile(fmt.Sprintf("d%d/f%d.txt", i%4, i), fmt.Sprintf("v2 %d\n", i))
	}
	b = repo.Commit("B")
	if _, err := p.SetPolicy(t.Context(), PolicyPoolKeepIgnored, kept); err != nil {
		t.Fatal(err)
	}
	res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1, Base: a})
	if err != nil {
		t.Fatal(err)
	}
	return repo, p, res.Created[0].Path, b
}

// writeTree writes files (path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoolKeptPathsHandedOut: with pool.keep_ignored naming
// node_modules, a pooled worktree holding an ignored node_modules (files,
// folders, and a file that is a hard link into a package store outside,
// as pnpm makes them) is handed out, by git status and by its stamp, and
// the workspace keeps it whole: the same files, the link still a link.
func TestPoolKeptPathsHandedOut(t *testing.T) {
	t.Parallel()
	for _, stamped := range []bool{false, true} {
		t.Run(fmt.Sprintf("stamped=%v", stamped), func(t *testing.T) {
			t.Parallel()
			_, p, pool, b := keptScene(t, "node_modules")
			cache := map[string]string{"node_modules/left-pad/index.js": "module.exports = 1\n",
				"node_modules/.bin/tool": "#!/bin/sh\n", "node_modules/a/b/c/deep.js": "deep\n"}
			writeTree(t, pool, cache)
			store := filepath.Join(t.TempDir(), "store-file")
			if err := os.WriteFile(store, []byte("from the store\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(store, filepath.Join(pool, "node_modules/linked.js")); err != nil {
				t.Fatal(err)
			}
			cache["node_modules/linked.js"] = "from the store\n"
			if err := os.Symlink(".pnpm/left-pad@1/node_modules/left-pad", filepath.Join(pool, "node_modules/left-pad-link")); err != nil {
				t.Fatal(err)
			}
			cache["node_modules/.pnpm/left-pad@1/node_modules/left-pad/index.js"] = "pnpm\n"
			writeTree(t, pool, map[string]string{"node_modules/.pnpm/left-pad@1/node_modules/left-pad/index.js": "pnpm\n"})
			if stamped {
				recs, err := p.poolRecords()
				if err != nil || len(recs) != 1 {
					t.Fatalf("pool records %v, %v", recs, err)
				}
				entry, err := verifyRepository("pool", recs[0])
				if err != nil || !p.stampPooledClean(t.Context(), recs[0], entry) {
					t.Fatalf("no stamp recorded for a worktree with only kept caches (%v)", err)
				}
				kept, _ := p.PoolKeepIgnored()
				if got, err := stampOf(recs[0], entry, kept); err != nil || !p.stampHolds(recs[0], got) {
					t.Fatalf("the stamp recorded does not hold: %v", err)
				}
			}
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
			if ws.Pool == nil || !ws.Pool.Used {
				t.Fatalf("a pooled worktree holding only kept caches was not handed out: %+v", ws.Pool)
			}
			for rel, want := range cache {
				if got, err := os.ReadFile(filepath.Join(ws.Path, rel)); err != nil || string(got) != want {
					t.Errorf("%s in the workspace: %q, %v", rel, got, err)
				}
			}
			var st, sst syscall.Stat_t
			if syscall.Stat(filepath.Join(ws.Path, "node_modules/linked.js"), &st) != nil || syscall.Stat(store, &sst) != nil || st.Ino != sst.Ino {
				t.Error("the link into the store is not the store's file any more")
			}
			status := gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall")
			for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
				if !strings.HasPrefix(line, "!! node_modules/") {
					t.Errorf("workspace status line %q: only ignored files in node_modules may be there", line)
				}
			}
			if got := strings.TrimSpace(gitOut(t, ws.Path, "rev-parse", "HEAD")); got != b {
				t.Errorf("HEAD %s, want %s", got, b)
			}
		})
	}
}

// TestPoolDrainDeletesKeptPaths: pool drain deletes a pooled worktree
// holding kept caches (they are caches by the policy's definition), and
// only the worktree: the package store its links point into stays.
func TestPoolDrainDeletesKeptPaths(t *testing.T) {
	t.Parallel()
	repo, p, pool, _ := keptScene(t, "node_modules")
	writeTree(t, pool, map[string]string{"node_modules/x/index.js": "x\n"})
	store := filepath.Join(t.TempDir(), "store-file")
	if err := os.WriteFile(store, []byte("from the store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(store, filepath.Join(pool, "node_modules/linked.js")); err != nil {
		t.Fatal(err)
	}
	res, err := p.PoolDrain(t.Context(), PoolDrainOptions{})
	if err != nil || len(res.Drained) != 1 || len(res.Left) != 0 {
		t.Fatalf("drain: %+v, %v", res, err)
	}
	if _, err := os.Lstat(pool); !os.IsNotExist(err) {
		t.Errorf("the pooled worktree is still there: %v", err)
	}
	if got, err := os.ReadFile(store); err != nil || string(got) != "from the store\n" {
		t.Errorf("the store's file: %q, %v", got, err)
	}
	if strings.Contains(repo.Git("worktree", "list"), pool) {
		t.Error("git still lists the pooled worktree")
	}
}

// TestPoolKeptPathsRefused: pool.keep_ignored lets through only files git
// ignores inside the named paths. An ignored file elsewhere, an untracked
// file or a change under a kept name that git does not ignore, a hard
// link on a tracked file there, an .env inside a kept path, a kept path
// that is a symbolic link, and caches stamped under a policy since
// turned off: each pooled worktree is set aside, never handed out, and
// what was written in it stays.
func TestPoolKeptPathsRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]func(t *testing.T, p *Provider, pool string) string{
		"ignored file outside the kept paths": func(t *testing.T, _ *Provider, pool string) string {
			writeTree(t, pool, map[string]string{"node_modules/ok.js": "ok\n"})
			return writeIn(t, pool, "d2/x.log")
		},
		"untracked file in a kept path git does not ignore": func(t *testing.T, _ *Provider, pool string) string {
			return writeIn(t, pool, "vendor/new.txt")
		},
		"tracked file changed in a kept path": func(t *testing.T, _ *Provider, pool string) string {
			return writeIn(t, pool, "vendor/lib.txt")
		},
		"hard link on a tracked file in a kept path": func(t *testing.T, _ *Provider, pool string) string {
			outside := filepath.Join(t.TempDir(), "precious")
			if err := os.WriteFile(outside, []byte("vendored\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(pool, "vendor/lib.txt")
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(outside, path); err != nil {
				t.Fatal(err)
			}
			return outside
		},
		"hard link to a file outside, out of the kept paths": func(t *testing.T, _ *Provider, pool string) string {
			outside := filepath.Join(t.TempDir(), "other-name")
			writeTree(t, pool, map[string]string{"build.log": "log\n"})
			if err := os.Link(filepath.Join(pool, "build.log"), outside); err != nil {
				t.Fatal(err)
			}
			return outside
		},
		".env inside a kept path": func(t *testing.T, _ *Provider, pool string) string {
			writeTree(t, pool, map[string]string{"node_modules/pkg/.env": "TOKEN=secret\n"})
			return filepath.Join(pool, "node_modules/pkg/.env")
		},
		"kept path is a symbolic link": func(t *testing.T, _ *Provider, pool string) string {
			outside := t.TempDir()
			writeTree(t, outside, map[string]string{"someone.js": "someone's\n"})
			if err := os.Symlink(outside, filepath.Join(pool, "node_modules")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(outside, "someone.js")
		},
		"symbolic link out of the worktree in a kept path": func(t *testing.T, _ *Provider, pool string) string {
			outside := t.TempDir()
			writeTree(t, outside, map[string]string{"someone.js": "someone's\n"})
			writeTree(t, pool, map[string]string{"node_modules/ok/index.js": "ok\n"})
			if err := os.Symlink(outside, filepath.Join(pool, "node_modules/escape")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(outside, "someone.js")
		},
		"relative symbolic link climbing out of a kept path": func(t *testing.T, _ *Provider, pool string) string {
			if err := os.MkdirAll(filepath.Join(pool, "node_modules"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../..", filepath.Join(pool, "node_modules/up")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(pool, "d0/f0.txt")
		},
		"symbolic link into git's folder in a kept path": func(t *testing.T, _ *Provider, pool string) string {
			if err := os.MkdirAll(filepath.Join(pool, "node_modules"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../.git", filepath.Join(pool, "node_modules/g")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(pool, "d0/f0.txt")
		},
		"stamped, then the policy turned off": func(t *testing.T, p *Provider, pool string) string {
			writeTree(t, pool, map[string]string{"node_modules/cached.js": "cached\n"})
			recs, err := p.poolRecords()
			if err != nil || len(recs) != 1 {
				t.Fatalf("pool records %v, %v", recs, err)
			}
			entry, err := verifyRepository("pool", recs[0])
			if err != nil || !p.stampPooledClean(t.Context(), recs[0], entry) {
				t.Fatalf("no stamp: %v", err)
			}
			if _, err := p.SetPolicy(t.Context(), PolicyPoolKeepIgnored, ""); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(pool, "node_modules/cached.js")
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, p, pool, b := keptScene(t, "node_modules,vendor")
			keep := tamper(t, p, pool)
			before, _ := os.ReadFile(keep)
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
			if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "checks_failed" {
				t.Errorf("pool use %+v, want checks_failed", ws.Pool)
			}
			if after, err := os.ReadFile(keep); err != nil || string(after) != string(before) {
				t.Errorf("%s changed: %q, %v", keep, after, err)
			}
			if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolAside {
				t.Errorf("pool after: %+v", l)
			} else {
				t.Logf("set aside: %s", l.Pool[0].Reason)
			}
			if _, err := os.Stat(filepath.Join(ws.Path, "node_modules")); err == nil {
				t.Error("the workspace made with git has a node_modules")
			}
		})
	}
}

// TestPoolKeepIgnoredDamaged: a damaged pool.keep_ignored record (what
// may stay in a pooled worktree cannot be known) makes allocation fall
// back to git (reason unreadable) and leaves the pool as it was; reading
// the policy names the file.
func TestPoolKeepIgnoredDamaged(t *testing.T) {
	t.Parallel()
	_, p, pool, b := keptScene(t, "node_modules")
	path := filepath.Join(p.policyDir(), PolicyPoolKeepIgnored+".json")
	if err := os.WriteFile(path, []byte(`{"format":"majlis.policy/1","key":"pool.keep_ignored","value":"*"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: b})
	if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "unreadable" {
		t.Errorf("pool use %+v, want unreadable", ws.Pool)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady || l.Pool[0].Path != pool {
		t.Errorf("pool after: %+v, want it ready as it was", l)
	}
	if _, err := p.PoolKeepIgnored(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("reading the damaged record: %v, want an error naming %s", err, path)
	}
}

// TestRecycleKeepsKeptPaths: with pool.keep_ignored naming build, the
// recycling of a due trash keeps the task's build folder (ignored) and
// deletes every other ignored file (its .env, its log); the workspace
// allocated from it starts with that build folder and nothing else
// ignored.
func TestRecycleKeepsKeptPaths(t *testing.T) {
	t.Parallel()
	repo, p, trash, _ := recycleScene(t)
	if err := p.setPoolPolicy(PolicyPoolKeepIgnored, "build"); err != nil {
		t.Fatal(err)
	}
	built, err := os.ReadFile(filepath.Join(trash, "build/out.o"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PurgeDue(t.Context())
	if err != nil || len(res.Purged) != 1 || !isPoolBinding(res.Purged[0].Recycled) {
		t.Fatalf("purge: %+v, %v; want T-1 recycled into the pool", res, err)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: strings.TrimSpace(repo.Git("rev-parse", "HEAD"))})
	if ws.Pool == nil || !ws.Pool.Used {
		t.Fatalf("allocate did not use the recycled worktree: %+v", ws.Pool)
	}
	if got, err := os.ReadFile(filepath.Join(ws.Path, "build/out.o")); err != nil || string(got) != string(built) {
		t.Errorf("the kept build output: %q, %v; want %q", got, err, built)
	}
	st := strings.TrimSpace(gitOut(t, ws.Path, "status", "--porcelain", "--ignored", "-uall"))
	if st != "!! build/out.o" {
		t.Errorf("the recycled workspace's status:\n%s\nwant only the kept build/out.o", st)
	}
}
