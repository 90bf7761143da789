package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// BenchmarkPoolRecycle: the purge of a due kept trash of 20,000 files,
// 10 of them differing from the pool's base, recycled into the pool
// (salvage check, rename, git's fresh entry, cleaning, the check of a
// pooled worktree, records), against `git worktree add --detach` of a
// fresh one at the base. majlis-ns/op is the whole purge, its salvage
// included (which every purge makes, recycling or deleting); the
// recycling alone is split into entry-ns/op (rename and git's entries),
// clean-ns/op (the cleaning to the base) and verify-ns/op (check, stamp,
// ready), and recycle-x-git is its median against the floor's, in the
// same run. Recycling should cost a small part of a fill.
func BenchmarkPoolRecycle(b *testing.B) {
	files := fixtures.Smaller(20000, 100)
	repo, p, a, c := poolBenchRepo(b, files, 10)
	if err := p.setPoolPolicy(PolicyPoolSize, fmt.Sprint(maxPoolSize)); err != nil {
		b.Fatal(err)
	}
	plain := filepath.Join(filepath.Dir(repo.Dir), "plain")
	var splits []recycleTimings
	_, floor := fixtures.Pair{
		Prepare: func(i int) {
			ctx, binding := context.Background(), fmt.Sprintf("R-%d", i)
			if _, err := p.Allocate(ctx, AllocateOptions{Binding: binding, Base: c, NoPool: true}); err != nil {
				b.Fatal(err)
			}
			if _, err := p.Reclaim(ctx, ReclaimOptions{Binding: binding, Yes: true, KeepTrash: time.Nanosecond}); err != nil {
				b.Fatal(err)
			}
		},
		Ours: func(i int) time.Duration {
			t0 := time.Now()
			res, err := p.PurgeDue(context.Background())
			d := time.Since(t0)
			if err != nil || len(res.Purged) != 1 || res.Purged[0].Recycled == "" {
				b.Fatalf("purge: %+v, %v", res, err)
			}
			splits = append(splits, *lastRecycleTimings.Load())
			return d
		},
		Floor: func(i int) time.Duration {
			return timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "--detach",
				filepath.Join(plain, fmt.Sprintf("F-%d", i)), a)
		},
	}.Run(b)
	var e, cl, v, all []time.Duration
	for _, t := range splits {
		e, cl, v = append(e, t.entry), append(cl, t.clean), append(v, t.verify)
		all = append(all, t.entry+t.clean+t.verify)
	}
	b.ReportMetric(float64(fixtures.Median(all)), "recycle-ns/op")
	b.ReportMetric(float64(fixtures.Median(all))/float64(fixtures.Median(floor)), "recycle-x-git")
	b.ReportMetric(float64(fixtures.Median(e)), "entry-ns/op")
	b.ReportMetric(float64(fixtures.Median(cl)), "clean-ns/op")
	b.ReportMetric(float64(fixtures.Median(v)), "verify-ns/op")
}
