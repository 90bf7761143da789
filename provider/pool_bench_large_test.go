package provider

import (
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// How many hand-outs BenchmarkPoolAllocateLarge times at the least (its
// p99 is their 99th percentile by nearest rank: the slowest of fewer
// than 100), how many of them are paired with `git worktree add -b`
// (each writes 100,000 files), and how many pooled worktrees one fill
// makes (one settling wait for all of them).
var (
	poolLargeAllocs = flag.Int("pool.large.allocs", 12, "BenchmarkPoolAllocateLarge: hand-outs timed")
	poolLargeFloors = flag.Int("pool.large.floors", 3, "BenchmarkPoolAllocateLarge: git worktree add runs timed")
)

const poolLargeBatch = 4

// BenchmarkPoolAllocateLarge: allocations from the pool on 100,000
// files, each at a base 10 files away from its pooled worktree's (filled
// and settled untimed before it, as the server's background fill leaves
// them), reported as p50-ns and p99-ns with the split of the median
// hand-out, beside `git worktree add -b` of the same commit (its median,
// git-ns/op, and the ratio of the medians, x-git). Goal: p50 under
// 400 ms. The 100,000-file repository is made once per run; each
// workspace is reclaimed and its trash deleted after it is timed.
// make bench-smoke runs it once on 100 files.
func BenchmarkPoolAllocateLarge(b *testing.B) {
	files := fixtures.Smaller(100000, 100)
	allocs, floors := fixtures.Smaller(*poolLargeAllocs, 1), fixtures.Smaller(*poolLargeFloors, 1)
	repo, p, a, c := poolBenchRepo(b, files, 10)
	plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
	var ours, floor []time.Duration
	var splits []poolTimings
	one := func(i int) {
		b.StopTimer()
		defer b.StartTimer()
		if (i-1)%poolLargeBatch == 0 {
			fillPool(b, p, a, min(poolLargeBatch, max(allocs-i+1, 1)))
		}
		syscall.Sync()
		b.StartTimer()
		ours = append(ours, handOut(b, p, fmt.Sprintf("P-%d", i), c, &splits))
		b.StopTimer()
		if _, err := p.Reclaim(context.Background(), ReclaimOptions{Binding: fmt.Sprintf("P-%d", i), Yes: true, DeleteTrash: true}); err != nil {
			b.Fatal(err)
		}
		if i > floors {
			return
		}
		syscall.Sync()
		dir := filepath.Join(plain, fmt.Sprintf("G-%d", i))
		b.StartTimer()
		floor = append(floor, timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", i), dir, c))
		b.StopTimer()
		run(b, repo.Dir, nil, "git", "worktree", "remove", "--force", dir)
	}
	i := 0
	for b.Loop() {
		i++
		one(i)
	}
	for i < allocs {
		i++
		one(i)
	}
	mo, mf := fixtures.Median(ours), fixtures.Median(floor)
	b.ReportMetric(float64(percentile(ours, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(ours, 99)), "p99-ns")
	b.ReportMetric(float64(mo), "majlis-ns/op")
	b.ReportMetric(float64(mf), "git-ns/op")
	b.ReportMetric(float64(mo)/float64(mf), "x-git")
	b.ReportMetric(float64(len(ours)), "allocations")
	poolSplit(b, splits)
}

// fillPool fills the pool at base with n more pooled worktrees, settled
// as the server's background fill leaves them.
func fillPool(b *testing.B, p *Provider, base string, n int) {
	l, err := p.PoolList()
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range l.Pool {
		if w.State == "ready" {
			n++
		}
	}
	if _, err := p.PoolFill(context.Background(), PoolFillOptions{Size: n, Base: base, Settle: true}); err != nil {
		b.Fatal(err)
	}
}

// percentile returns the q-th percentile of d by nearest rank.
func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	k := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[max(k, 0)]
}
