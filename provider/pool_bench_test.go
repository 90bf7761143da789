package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// Benchmarks of the warm pool (issue 29), each against its floor in the
// same run, as pairs (fixtures.Pair: alternating, the disk synced before
// each timed run, the medians of at least three pairs). majlis runs in
// process here (the library call the server makes; the CLI adds its own
// start-up), so that the split of a hand-out can be reported:
// verify-ns/op, switch-ns/op, records-ns/op (rename, entry, branch, hook,
// events).

// poolBenchRepo is a GenerateLarge repository with commit A (the pool's
// base) and commit B, changed files away from A.
func poolBenchRepo(b *testing.B, files, changed int) (repo *fixtures.Repo, p *Provider, a, c string) {
	repo = benchRepo(b, files)
	a = repo.Head()
	for k := range changed {
		name := filepath.Join(repo.Dir, fixtures.LargeFileName(k*(files/changed)))
		if err := os.WriteFile(name, fmt.Appendf(nil, "changed %d\n", k), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	repo.Git("commit", "-q", "-a", "-m", "B")
	c = repo.Head()
	repo.Git("checkout", "-q", "--detach", a)
	var err error
	if p, err = Open(context.Background(), repo.Dir, Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return repo, p, a, c
}

// fillOneAt makes one pooled worktree at base; settled, as the server's
// background fill leaves them (the allocation benchmarks), or not, as
// pool fill does (BenchmarkPoolFill).
func fillOneAt(b *testing.B, p *Provider, base string, settle bool) {
	ready := 0
	if l, err := p.PoolList(); err == nil {
		for _, w := range l.Pool {
			if w.State == "ready" {
				ready++
			}
		}
	}
	if _, err := p.PoolFill(context.Background(), PoolFillOptions{Size: ready + 1, Base: base, Settle: settle}); err != nil {
		b.Fatal(err)
	}
}

// poolSplit reports the split of the hand-outs' time (medians).
func poolSplit(b *testing.B, splits []poolTimings) {
	var v, s, r []time.Duration
	for _, t := range splits {
		v, s, r = append(v, t.verify), append(s, t.switching), append(r, t.records)
	}
	b.ReportMetric(float64(fixtures.Median(v)), "verify-ns/op")
	b.ReportMetric(float64(fixtures.Median(s)), "switch-ns/op")
	b.ReportMetric(float64(fixtures.Median(r)), "records-ns/op")
}

// handOut allocates binding from the pool at base and returns how long
// it took, failing when no pooled worktree was used.
func handOut(b *testing.B, p *Provider, binding, base string, splits *[]poolTimings) time.Duration {
	t0 := time.Now()
	ws, err := p.Allocate(context.Background(), AllocateOptions{Binding: binding, Base: base})
	d := time.Since(t0)
	if err != nil {
		b.Fatal(err)
	}
	if ws.Pool == nil || !ws.Pool.Used {
		b.Fatalf("%s was not taken from the pool: %+v", binding, ws.Pool)
	}
	*splits = append(*splits, *lastPoolTimings.Load())
	return d
}

// BenchmarkPoolAllocate: allocate from the pool at a base 10 files away
// from the pooled worktree's, against `git worktree add -b` of the same
// commit, on 20,000 files. Goal: at least 20x faster (x-git at most
// 0.05; moonshot 0.033).
func BenchmarkPoolAllocate(b *testing.B) {
	files := fixtures.Smaller(20000, 100)
	repo, p, a, c := poolBenchRepo(b, files, 10)
	plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
	var splits []poolTimings
	fixtures.Pair{
		Prepare: func(i int) { fillOneAt(b, p, a, true) },
		Ours:    func(i int) time.Duration { return handOut(b, p, fmt.Sprintf("P-%d", i), c, &splits) },
		Floor: func(i int) time.Duration {
			return timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", i),
				filepath.Join(plain, fmt.Sprintf("G-%d", i)), c)
		},
	}.Run(b)
	poolSplit(b, splits)
}

// BenchmarkPoolAllocateFar: allocate from the pool at a base 1,000 files
// away, against `git switch` of those 1,000 files in an existing
// worktree, on 20,000 files. Goal: at most 1.3x.
func BenchmarkPoolAllocateFar(b *testing.B) {
	files := fixtures.Smaller(20000, 100)
	repo, p, a, c := poolBenchRepo(b, files, fixtures.Smaller(1000, 10))
	plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
	var splits []poolTimings
	fixtures.Pair{
		Prepare: func(i int) {
			fillOneAt(b, p, a, true)
			run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "--detach", filepath.Join(plain, fmt.Sprintf("S-%d", i)), a)
			(&fixtures.Repo{T: b, Dir: filepath.Join(plain, fmt.Sprintf("S-%d", i))}).Settle()
		},
		Ours: func(i int) time.Duration { return handOut(b, p, fmt.Sprintf("P-%d", i), c, &splits) },
		Floor: func(i int) time.Duration {
			return timed(b, filepath.Join(plain, fmt.Sprintf("S-%d", i)), nil, "git", "switch", "-q", "-c", fmt.Sprintf("s-%d", i), c)
		},
	}.Run(b)
	poolSplit(b, splits)
}

// BenchmarkPoolFill: `pool fill` of one worktree against `git worktree
// add --detach` of the same commit, on 20,000 files. Goal: at most 1.15x.
func BenchmarkPoolFill(b *testing.B) {
	files := fixtures.Smaller(20000, 100)
	repo, p, a, _ := poolBenchRepo(b, files, 10)
	plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
	fixtures.Pair{
		Ours: func(i int) time.Duration {
			t0 := time.Now()
			fillOneAt(b, p, a, false)
			return time.Since(t0)
		},
		Floor: func(i int) time.Duration {
			return timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "--detach",
				filepath.Join(plain, fmt.Sprintf("F-%d", i)), a)
		},
	}.Run(b)
}

// BenchmarkPoolDrain: `pool drain` of 1 and of 4 pooled worktrees
// (each moved aside, checked there: no process in it, git status with
// ignored files, no hard link; then deleted by identity and git's entry
// dropped) against `git worktree remove` of as many worktrees of the
// same commit, one after the other, on 20,000 files.
func BenchmarkPoolDrain(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("worktrees=%d", n), func(b *testing.B) {
			files := fixtures.Smaller(20000, 100)
			repo, p, a, _ := poolBenchRepo(b, files, 10)
			plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
			fixtures.Pair{
				Prepare: func(i int) {
					if _, err := p.PoolFill(context.Background(), PoolFillOptions{Size: n, Base: a}); err != nil {
						b.Fatal(err)
					}
					for k := range n {
						run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "--detach", filepath.Join(plain, fmt.Sprintf("D-%d-%d", i, k)), a)
					}
				},
				Ours: func(i int) time.Duration {
					t0 := time.Now()
					res, err := p.PoolDrain(context.Background(), PoolDrainOptions{})
					d := time.Since(t0)
					if err != nil || len(res.Drained) != n || len(res.Left) != 0 {
						b.Fatalf("drain: %+v, %v", res, err)
					}
					return d
				},
				Floor: func(i int) time.Duration {
					t0 := time.Now()
					for k := range n {
						run(b, repo.Dir, nil, "git", "worktree", "remove", filepath.Join(plain, fmt.Sprintf("D-%d-%d", i, k)))
					}
					return time.Since(t0)
				},
			}.Run(b)
		})
	}
}
