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

// Benchmarks of the undo window (issue 24), each against its floor in
// the same run, as pairs (fixtures.Pair: alternating, the disk synced
// before each timed run, the medians of at least three pairs).

// noPurge is the environment of a timed reclaim: no detached purge is
// started behind it, which would run during the next timed run (starting
// it costs the reclaim a fork; its work is never the reclaim's).
var noPurge = []string{"MAJLIS_BACKGROUND_PURGE=0"}

// BenchmarkReclaimKept: the user-visible time of `majlis workspace
// reclaim --yes` of a clean 20,000-file workspace under the default undo
// window (the trash is kept: salvage check, one rename, the check in the
// trash, HEAD detached) against `git worktree remove` of an identical
// worktree. Goal: at most 0.6x (moonshot 0.4x).
func BenchmarkReclaimKept(b *testing.B) {
	bin := majlisBinary(b)
	repo := benchRepo(b, fixtures.Smaller(20000, 100))
	root := filepath.Join(filepath.Dir(repo.Dir), "plain")
	g := func(i int) string { return filepath.Join(root, fmt.Sprintf("G-%d", i)) }
	fixtures.Pair{
		Prepare: func(i int) {
			run(b, repo.Dir, nil, bin, "workspace", "allocate", fmt.Sprintf("K-%d", i))
			run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("kg-%d", i), g(i), "HEAD")
		},
		Ours: func(i int) time.Duration {
			return timed(b, repo.Dir, noPurge, bin, "workspace", "reclaim", fmt.Sprintf("K-%d", i), "--yes")
		},
		Floor: func(i int) time.Duration { return timed(b, repo.Dir, nil, "git", "worktree", "remove", g(i)) },
	}.Run(b)
}

// BenchmarkReclaimChanged: `majlis workspace reclaim --yes` of a
// workspace with 1,000 changed files (of 20,000), until the command
// returns, against `git stash -u` plus `git worktree remove` of an
// identical worktree (report only).
func BenchmarkReclaimChanged(b *testing.B) {
	bin := majlisBinary(b)
	files, changed := fixtures.Smaller(20000, 100), fixtures.Smaller(1000, 10)
	repo := benchRepo(b, files)
	root := filepath.Join(filepath.Dir(repo.Dir), "plain")
	ws := filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces")
	g := func(i int) string { return filepath.Join(root, fmt.Sprintf("G-%d", i)) }
	dirty := func(dir string, i int) {
		for k := range changed {
			name := filepath.Join(dir, fixtures.LargeFileName(k*(files/changed)))
			if err := os.WriteFile(name, fmt.Appendf(nil, "changed %d in round %d\n", k, i), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	fixtures.Pair{
		Prepare: func(i int) {
			run(b, repo.Dir, nil, bin, "workspace", "allocate", fmt.Sprintf("C-%d", i))
			dirty(filepath.Join(ws, fmt.Sprintf("C-%d", i)), i)
			run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("cg-%d", i), g(i), "HEAD")
			dirty(g(i), i)
		},
		Ours: func(i int) time.Duration {
			return timed(b, repo.Dir, noPurge, bin, "workspace", "reclaim", fmt.Sprintf("C-%d", i), "--yes")
		},
		Floor: func(i int) time.Duration {
			return timed(b, g(i), nil, "git", "stash", "-u", "-q") + timed(b, repo.Dir, nil, "git", "worktree", "remove", g(i))
		},
	}.Run(b)
}

// BenchmarkPurgeDelete: the deletion step of the purge of a clean
// 20,000-file workspace's kept trash (from the purging event to the folder
// gone: the deletion by descriptor, PurgeDue in process) against `rm -rf`
// of an identical worktree's folder (goal: at most 1.2x), with the whole
// purge (the snapshot that checks the trash for changes, the records,
// git's entry) beside it: majlis-ns/op, rm-ns/op, x-rm, purge-ns/op,
// purge-x-rm. The pairs are fixtures.Pair's, with rm -rf for floor.
func BenchmarkPurgeDelete(b *testing.B) {
	repo := benchRepo(b, fixtures.Smaller(20000, 100))
	p, err := Open(context.Background(), repo.Dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	root := filepath.Join(filepath.Dir(repo.Dir), "plain")
	g := func(i int) string { return filepath.Join(root, fmt.Sprintf("G-%d", i)) }
	var started, deleted time.Time
	p.hook = func(_ context.Context, name string) {
		switch name {
		case fpPurgeStarted.Name():
			started = time.Now()
		case fpPurgeDeleted.Name():
			deleted = time.Now()
		}
	}
	var ours, floor, whole []time.Duration
	one := func(i int) {
		if _, err := p.Allocate(context.Background(), AllocateOptions{Binding: fmt.Sprintf("P-%d", i)}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Reclaim(context.Background(), ReclaimOptions{Binding: fmt.Sprintf("P-%d", i), Yes: true, KeepTrash: time.Nanosecond}); err != nil {
			b.Fatal(err)
		}
		run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("pg-%d", i), g(i), "HEAD")
		purge := func() {
			syscall.Sync()
			t0 := time.Now()
			res, err := p.PurgeDue(context.Background())
			if err != nil || len(res.Purged) != 1 {
				b.Fatalf("purge: %+v, %v", res, err)
			}
			whole = append(whole, time.Since(t0))
			ours = append(ours, deleted.Sub(started))
		}
		rm := func() {
			syscall.Sync()
			floor = append(floor, timed(b, repo.Dir, nil, "rm", "-rf", g(i)))
			run(b, repo.Dir, nil, "git", "worktree", "prune")
		}
		if i%2 == 1 {
			purge()
			rm()
		} else {
			rm()
			purge()
		}
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
	mo, mf, mw := fixtures.Median(ours), fixtures.Median(floor), fixtures.Median(whole)
	b.ReportMetric(float64(mo.Nanoseconds()), "majlis-ns/op")
	b.ReportMetric(float64(mf.Nanoseconds()), "rm-ns/op")
	b.ReportMetric(float64(mo)/float64(mf), "x-rm")
	b.ReportMetric(float64(mw.Nanoseconds()), "purge-ns/op")
	b.ReportMetric(float64(mw)/float64(mf), "purge-x-rm")
	b.ReportMetric(float64(i), "pairs")
}
