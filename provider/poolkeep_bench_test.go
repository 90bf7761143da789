package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// BenchmarkPoolAllocateKept: what pool.keep_ignored's checks add to a
// hand-out, on 20,000 files at a base 10 files away. Each round times,
// in turn and each after a sync of the disk: a hand-out of a pooled
// worktree holding a kept node_modules of 5,000 files (keep_ignored on;
// majlis-ns/op), a hand-out of one holding nothing with keep_ignored off
// (off-ns/op), and `git worktree add -b` of the same commit (git-ns/op).
// kept-x-off is the cost of the kept cache (goal: the hand-out keeps its
// speed). stamped: the cached worktree was stamped as recycling leaves it
// (the fast path); unstamped: the check runs git status, which lists
// every ignored file of the cache.
func BenchmarkPoolAllocateKept(b *testing.B) {
	for _, stamped := range []bool{true, false} {
		b.Run(fmt.Sprintf("stamped=%v", stamped), func(b *testing.B) {
			files := fixtures.Smaller(20000, 100)
			cache := fixtures.Smaller(5000, 50)
			repo, p, a, c := keptBenchRepo(b, files)
			plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
			var kept, off, floor []time.Duration
			var vKept, vOff []time.Duration
			one := func(i int) {
				b.StopTimer()
				defer b.StartTimer()
				// Hand-outs take the oldest ready pooled worktree: fill in
				// the order they run.
				keptFirst := i%2 == 1
				for _, k := range []bool{keptFirst, !keptFirst} {
					setKept(b, p, k)
					fillOneAt(b, p, a, true)
					if k {
						fillCache(b, p, cache, stamped)
					}
				}
				for _, k := range []bool{keptFirst, !keptFirst} {
					setKept(b, p, k)
					var splits []poolTimings
					syscall.Sync()
					d := handOut(b, p, fmt.Sprintf("P-%d-%v", i, k), c, &splits)
					if k {
						kept, vKept = append(kept, d), append(vKept, splits[0].verify)
					} else {
						off, vOff = append(off, d), append(vOff, splits[0].verify)
					}
				}
				syscall.Sync()
				floor = append(floor, timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", i),
					filepath.Join(plain, fmt.Sprintf("G-%d", i)), c))
			}
			i := 0
			for b.Loop() {
				i++
				one(i)
			}
			for i < fixtures.MinPairs {
				i++
				one(i)
			}
			mk, mo, mf := fixtures.Median(kept), fixtures.Median(off), fixtures.Median(floor)
			b.ReportMetric(float64(mk), "majlis-ns/op")
			b.ReportMetric(float64(mf), "git-ns/op")
			b.ReportMetric(float64(mk)/float64(mf), "x-git")
			b.ReportMetric(float64(mo), "off-ns/op")
			b.ReportMetric(float64(mo)/float64(mf), "off-x-git")
			b.ReportMetric(float64(mk)/float64(mo), "kept-vs-off")
			b.ReportMetric(float64(fixtures.Median(vKept)), "verify-kept-ns/op")
			b.ReportMetric(float64(fixtures.Median(vOff)), "verify-off-ns/op")
			b.ReportMetric(float64(i), "pairs")
		})
	}
}

// keptBenchRepo is poolBenchRepo's with node_modules ignored.
func keptBenchRepo(b *testing.B, files int) (repo *fixtures.Repo, p *Provider, a, c string) {
	repo = benchRepo(b, files)
	repo.WriteGitignore("node_modules/")
	repo.Git("add", ".gitignore")
	repo.Git("commit", "-q", "-m", "ignore node_modules")
	a = repo.Head()
	for k := range 10 {
		name := filepath.Join(repo.Dir, fixtures.LargeFileName(k*(files/10)))
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

func setKept(b *testing.B, p *Provider, on bool) {
	v := ""
	if on {
		v = "node_modules"
	}
	if err := p.setPoolPolicy(PolicyPoolKeepIgnored, v); err != nil {
		b.Fatal(err)
	}
}

// fillCache writes a node_modules of n files (100 a folder) into the
// newest ready pooled worktree and, stamped, stamps it as recycling does.
func fillCache(b *testing.B, p *Provider, n int, stamped bool) {
	recs, err := p.poolRecords()
	if err != nil || len(recs) == 0 {
		b.Fatalf("pool records: %v", err)
	}
	r := recs[len(recs)-1]
	for k := range n {
		dir := filepath.Join(r.Claim.Path, "node_modules", fmt.Sprintf("pkg%d", k/100))
		if k%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.js", k)), fmt.Appendf(nil, "module.exports = %d\n", k), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if !stamped {
		return
	}
	entry, err := verifyRepository("pool", r)
	if err != nil || !p.stampPooledClean(context.Background(), r, entry) {
		b.Fatalf("the cached pooled worktree was not stamped: %v", err)
	}
}
