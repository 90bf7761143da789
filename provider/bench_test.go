package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// Benchmarks run the real majlis binary beside the plain git commands that
// do the same job, in the same run, so make bench can report ratios.

// majlisBinary is the release build of cmd/majlis, which the benchmarks
// measure. When they run once each (fixtures.BenchSmoke) nothing is
// measured, and the tests' shared binary serves (fixtures.Binary: the
// same code, its failpoints off).
func majlisBinary(b *testing.B) string {
	if fixtures.BenchSmoke() {
		return fixtures.Binary(b)
	}
	return fixtures.ReleaseBinary(b)
}

func run(b *testing.B, dir string, env []string, name string, args ...string) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func benchRepo(b *testing.B, files int) *fixtures.Repo {
	repo := fixtures.GenerateLarge(b, files)
	if _, err := Init(context.Background(), repo.Dir, InitOptions{}); err != nil {
		b.Fatal(err)
	}
	return repo
}

// timed runs a command and returns how long it took.
func timed(b *testing.B, dir string, env []string, name string, args ...string) time.Duration {
	b.Helper()
	t0 := time.Now()
	run(b, dir, env, name, args...)
	return time.Since(t0)
}

// versus reports a majlis operation beside its plain-git floor, measured
// alternately in the same loop so both see the same machine state.
func versus(b *testing.B, n int, ours, floor time.Duration) {
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "majlis-ns/op")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "git-ns/op")
	b.ReportMetric(float64(ours)/float64(floor), "x-git")
}

// BenchmarkAllocate: `majlis workspace allocate` against `git worktree add
// -b`, alternately, in the same repository. With 20,000 files, each side
// writes the files of a checkout: it runs as pairs with the disk synced
// before each run, and reports the medians (fixtures.Pair).
func BenchmarkAllocate(b *testing.B) {
	bin := majlisBinary(b)
	ours := func(repo *fixtures.Repo, n int) time.Duration {
		return timed(b, repo.Dir, nil, bin, "workspace", "allocate", fmt.Sprintf("M-%d", n))
	}
	floor := func(repo *fixtures.Repo, n int) time.Duration {
		return timed(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", n),
			filepath.Join(filepath.Dir(repo.Dir), "plain", fmt.Sprintf("G-%d", n)), "HEAD")
	}
	b.Run("files=10", func(b *testing.B) {
		repo := benchRepo(b, 10)
		var o, f time.Duration
		n := 0
		for b.Loop() {
			n++
			o += ours(repo, n)
			f += floor(repo, n)
		}
		versus(b, n, o, f)
	})
	files := fixtures.Smaller(20000, 100)
	b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
		repo := benchRepo(b, files)
		fixtures.Pair{
			Ours:  func(i int) time.Duration { return ours(repo, i) },
			Floor: func(i int) time.Duration { return floor(repo, i) },
		}.Run(b)
	})
}

// BenchmarkSalvage: `majlis workspace salvage` of 1,000 dirty files in a
// 5,000-file repository (100 in 200 when the benchmarks run once each:
// fixtures.BenchSmoke) against the bare recipe run as plain git commands,
// alternately.
func BenchmarkSalvage(b *testing.B) {
	bin := majlisBinary(b)
	files, changed := fixtures.Smaller(5000, 200), fixtures.Smaller(1000, 100)
	repo := benchRepo(b, files)
	p, err := Open(context.Background(), repo.Dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ws, err := p.Allocate(context.Background(), AllocateOptions{Binding: "S"})
	if err != nil {
		b.Fatal(err)
	}
	// Each salvage captures new content, as in real use: both the majlis
	// run and the bare recipe write 1,000 new blobs.
	round := 0
	dirty := func() {
		round++
		for i := range changed {
			name := filepath.Join(ws.Path, fixtures.LargeFileName(i))
			if err := os.WriteFile(name, []byte(fmt.Sprintf("dirty %d round %d\n", i, round)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	gitDir := strings.TrimSpace(fixtures.Git(b, ws.Path, "rev-parse", "--absolute-git-dir"))
	tmp := filepath.Join(gitDir, "bench-index")
	env := []string{"GIT_INDEX_FILE=" + tmp}
	var ours, floor time.Duration
	n := 0
	b.Run(fmt.Sprintf("dirty=%d", changed), func(b *testing.B) {
		for b.Loop() {
			n++
			dirty()
			ours += timed(b, repo.Dir, nil, bin, "workspace", "salvage", "S")
			dirty()
			t0 := time.Now()
			data, err := os.ReadFile(filepath.Join(gitDir, "index"))
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				b.Fatal(err)
			}
			// Keep the index's mtime, as Snapshot does: a copy stamped
			// "now" would let git trust the stat data of racily-clean
			// entries and miss changes made in the index's last tick.
			if fi, err := os.Stat(filepath.Join(gitDir, "index")); err != nil {
				b.Fatal(err)
			} else if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
				b.Fatal(err)
			}
			run(b, ws.Path, env, "git", "add", "-A")
			tree := strings.TrimSpace(fixtures.GitEnv(b, ws.Path, env, "write-tree"))
			commit := strings.TrimSpace(fixtures.Git(b, ws.Path, "commit-tree", "-p", "HEAD", "-m", "salvage", tree))
			run(b, ws.Path, nil, "git", "update-ref", fmt.Sprintf("refs/bench/salvage/%d", n), commit, "")
			os.Remove(tmp)
			floor += time.Since(t0)
		}
		versus(b, n, ours, floor)
	})
}

// BenchmarkList: `majlis workspace list` with 200 workspaces (goal: under
// 50 ms), beside `git worktree list` of the same repository.
func BenchmarkList(b *testing.B) {
	bin := majlisBinary(b)
	repo := benchRepo(b, 10)
	p, err := Open(context.Background(), repo.Dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	size := fixtures.Smaller(200, 10)
	for i := range size {
		if _, err := p.Allocate(context.Background(), AllocateOptions{Binding: fmt.Sprintf("L-%03d", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run(fmt.Sprintf("workspaces=%d", size), func(b *testing.B) {
		var ours, floor time.Duration
		n := 0
		for b.Loop() {
			n++
			ours += timed(b, repo.Dir, nil, bin, "workspace", "list", "--json")
			floor += timed(b, repo.Dir, nil, "git", "worktree", "list", "--porcelain")
		}
		versus(b, n, ours, floor)
	})
}

// BenchmarkReclaim: `majlis workspace reclaim --yes --keep-trash 0` of a
// clean workspace against `git worktree remove`, on a 20,000-file
// repository, as pairs with the disk synced before each run
// (fixtures.Pair: the medians). It reports two ratios: until the
// workspace is gone from its path (the user waits for this; gone-ns/op,
// gone-x-git: a rename replaces the deletion on that path), and until the
// reclaim is over, the trash deleted as git deletes the worktree
// (majlis-ns/op, x-git). A reclaim keeps its trash by default (the undo
// window), and is then over about when its workspace is gone. The moment
// the path goes is observed by polling it from here.
func BenchmarkReclaim(b *testing.B) {
	bin := majlisBinary(b)
	repo := benchRepo(b, fixtures.Smaller(20000, 100))
	root := filepath.Join(filepath.Dir(repo.Dir), "plain")
	ws := func(i int) string {
		return filepath.Join(filepath.Dir(repo.Dir), filepath.Base(repo.Dir)+".workspaces", fmt.Sprintf("R-%d", i))
	}
	var gone []time.Duration
	_, floor := fixtures.Pair{
		Prepare: func(i int) {
			run(b, repo.Dir, nil, bin, "workspace", "allocate", fmt.Sprintf("R-%d", i))
			if _, err := os.Lstat(ws(i)); err != nil {
				b.Fatal(err)
			}
			run(b, repo.Dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("rg-%d", i), filepath.Join(root, fmt.Sprintf("G-%d", i)), "HEAD")
		},
		Ours: func(i int) time.Duration {
			total, vanished := timedUntilGone(b, repo.Dir, ws(i), bin, "workspace", "reclaim", fmt.Sprintf("R-%d", i), "--yes", "--keep-trash", "0")
			gone = append(gone, vanished)
			return total
		},
		Floor: func(i int) time.Duration {
			return timed(b, repo.Dir, nil, "git", "worktree", "remove", filepath.Join(root, fmt.Sprintf("G-%d", i)))
		},
	}.Run(b)
	g, f := fixtures.Median(gone), fixtures.Median(floor)
	b.ReportMetric(float64(g.Nanoseconds()), "gone-ns/op")
	b.ReportMetric(float64(g)/float64(f), "gone-x-git")
}

// timedUntilGone runs a command and returns how long it took, and how long
// until path had disappeared (polled every 100 µs meanwhile).
func timedUntilGone(b *testing.B, dir, path, name string, args ...string) (total, gone time.Duration) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	for done := false; ; {
		if _, serr := os.Lstat(path); errors.Is(serr, os.ErrNotExist) && gone == 0 {
			gone = time.Since(t0)
		}
		if done {
			break
		}
		select {
		case err = <-exited:
			done = true
		case <-time.After(100 * time.Microsecond):
		}
	}
	total = time.Since(t0)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	if gone == 0 {
		b.Fatalf("%s is still there after %s %s", path, name, strings.Join(args, " "))
	}
	return total, gone
}
