package salvage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// BenchmarkSnapshot measures salvage (Snapshot + gitops.UpdateRefCreate) of
// 1,000 dirty files (100 when the benchmarks run once each:
// fixtures.BenchSmoke) against the bare recipe run as plain git commands
// (cp index; GIT_INDEX_FILE=tmp git add -A; git write-tree;
// git commit-tree -p HEAD; git update-ref REF COMMIT ""; rm tmp), as
// pairs (fixtures.Pair: the order alternating, since the first git add -A
// of a pair runs measurably slower than the second; the disk synced
// before each run). It reports each side's median time and the ratio of
// the medians (the goal is at most 1.2).
//
// The text=auto case has every file under an end-of-line conversion, and
// one dirty file in ten written with CRLF, which the salvage keeps as it
// is beside the tree (converted.go): the cost of asking git which files a
// checkout would change.
func BenchmarkSnapshot(b *testing.B) {
	dirty := fixtures.Smaller(1000, 100)
	for _, tc := range []struct {
		n     int
		attrs bool
	}{{dirty, false}, {fixtures.Smaller(20000, 500), false}, {dirty, true}} {
		name := fmt.Sprintf("files=%d/dirty=%d", tc.n, dirty)
		if tc.attrs {
			name += "/text=auto"
		}
		n := tc.n
		b.Run(name, func(b *testing.B) {
			r := fixtures.GenerateLarge(b, n)
			eol := func(int) string { return "\n" }
			if tc.attrs {
				r.WriteFile(".gitattributes", "* text=auto\n")
				r.Commit("attributes")
				r.Settle()
				eol = func(i int) string {
					if i%10 == 0 {
						return "\r\n"
					}
					return "\n"
				}
			}
			step := n / dirty
			for i := 0; i < dirty*9/10; i++ {
				r.WriteFile(fixtures.LargeFileName(i*step), fmt.Sprintf("dirty %d%s", i, eol(i)))
			}
			for i := 0; i < dirty/10; i++ {
				r.WriteFile(fmt.Sprintf("new/%03d/untracked.txt", i), "untracked\n")
			}
			gitDir := filepath.Join(r.Dir, ".git")
			salvaged, recipes := map[int]SnapshotResult{}, map[int]string{}
			fixtures.Pair{
				Ours: func(i int) time.Duration {
					t0 := time.Now()
					res, err := Snapshot(ctx, r.Dir, "salvage")
					if err != nil {
						b.Fatal(err)
					}
					if err := gitops.UpdateRefCreate(ctx, r.Dir, fmt.Sprintf("refs/majlis/bench/salvage/%d", i), res.Commit); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					salvaged[i] = res
					return d
				},
				Floor: func(i int) time.Duration {
					t0 := time.Now()
					recipes[i] = bareRecipe(b, r, gitDir, fmt.Sprintf("refs/majlis/bench/recipe/%d", i))
					return time.Since(t0)
				},
			}.Run(b)
			for i, res := range salvaged {
				if res.Tree != recipes[i] || res.Files.Total() != dirty {
					b.Fatalf("Snapshot tree %s (%d files), recipe tree %s", res.Tree, res.Files.Total(), recipes[i])
				}
			}
		})
	}
}

// bareRecipe runs the salvage recipe of issue 3 as plain commands and
// returns the tree it stored.
func bareRecipe(b *testing.B, r *fixtures.Repo, gitDir, ref string) string {
	tmp := filepath.Join(gitDir, "bench-recipe.index")
	data, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp)
	env := []string{"GIT_INDEX_FILE=" + tmp}
	r.GitEnv(env, "add", "-A")
	tree := strings.TrimSpace(r.GitEnv(env, "write-tree"))
	commit := strings.TrimSpace(r.Git("commit-tree", "-p", "HEAD", "-m", "salvage", tree))
	r.Git("update-ref", ref, commit, "")
	return tree
}

// BenchmarkRestore measures a restore (gitops.AddWorktree with NoCheckout + RestoreInto) of
// a salvage of 1,000 dirty files in a 1,000-file repository (100 in 100
// when the benchmarks run once each: fixtures.BenchSmoke) against `git
// worktree add --detach` of the same salvage commit, the two alternating
// which goes first; it reports the medians and their ratio (the goal is at
// most 1.2).
func BenchmarkRestore(b *testing.B) {
	n := fixtures.Smaller(1000, 100)
	r := fixtures.GenerateLarge(b, n)
	for i := 0; i < n*9/10; i++ {
		r.WriteFile(fixtures.LargeFileName(i), fmt.Sprintf("dirty %d\n", i))
	}
	for i := 0; i < n/10; i++ {
		r.WriteFile(fmt.Sprintf("new/%03d/untracked.txt", i), "untracked\n")
	}
	snap, err := Snapshot(ctx, r.Dir, "salvage")
	if err != nil {
		b.Fatal(err)
	}
	root := fixtures.TempDir(b)
	var restore, add []time.Duration
	i := 0
	for b.Loop() {
		i++
		ours, floor := filepath.Join(root, fmt.Sprintf("restore-%d", i)), filepath.Join(root, fmt.Sprintf("add-%d", i))
		runRestore := func() {
			t0 := time.Now()
			if err := gitops.AddWorktree(ctx, r.Dir, gitops.AddOptions{Path: ours, Mode: gitops.Detached, Commit: snap.Parent, LockReason: "bench", NoCheckout: true}); err != nil {
				b.Fatal(err)
			}
			if _, err := RestoreInto(ctx, ours, snap.Commit, snap.Layout); err != nil {
				b.Fatal(err)
			}
			restore = append(restore, time.Since(t0))
		}
		runAdd := func() {
			t0 := time.Now()
			r.Git("worktree", "add", "--quiet", "--detach", floor, snap.Commit)
			add = append(add, time.Since(t0))
		}
		if i%2 == 0 {
			runRestore()
			runAdd()
		} else {
			runAdd()
			runRestore()
		}
		b.StopTimer()
		if got, want := fixtures.Git(b, ours, "rev-parse", "HEAD"), fixtures.Git(b, floor, "rev-parse", "HEAD^"); got != want {
			b.Fatalf("restored HEAD %s, want %s", got, want)
		}
		r.Git("worktree", "unlock", ours)
		r.Git("worktree", "remove", "--force", ours)
		r.Git("worktree", "remove", "--force", floor)
		b.StartTimer()
	}
	mo, mf := fixtures.Median(restore), fixtures.Median(add)
	b.ReportMetric(float64(mo.Nanoseconds()), "majlis-ns/op")
	b.ReportMetric(float64(mf.Nanoseconds()), "git-ns/op")
	b.ReportMetric(float64(mo)/float64(mf), "x-git")
}
