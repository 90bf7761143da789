package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// The scale benchmarks share one repository of ten files with 1,000
// workspaces, built once per benchmark process (it takes tens of seconds)
// and only when a benchmark asks for it: make test never builds it.

// scaleWorkspaces is how many workspaces the shared repository holds,
// the target's included: 1,000, or 20 when the benchmarks run once each
// (fixtures.BenchSmoke), which still runs every benchmark's code.
func scaleWorkspaces() int { return fixtures.Smaller(1000, 20) }

type scaleFixture struct {
	dir    string // the repository's top level
	p      *Provider
	target *claimRecord // the workspace "target", the reclaim target of the peer check and the preview
}

var (
	scaleOnce  sync.Once
	scaleRepo  *scaleFixture
	scaleError error
)

// scaleRepository returns the shared repository. It lives under the
// test process's HOME (fixtures.Main removes it) rather than in a
// benchmark's TempDir, since several benchmarks use it in turn.
func scaleRepository(b *testing.B) *scaleFixture {
	b.Helper()
	scaleOnce.Do(func() {
		t0 := time.Now()
		scaleRepo, scaleError = buildScale(b)
		b.Logf("%d workspaces made in %v", scaleWorkspaces(), time.Since(t0))
	})
	if scaleError != nil {
		b.Fatal(scaleError)
	}
	return scaleRepo
}

func buildScale(b *testing.B) (*scaleFixture, error) {
	ctx := context.Background()
	parent, err := os.MkdirTemp(os.Getenv("HOME"), "scale-")
	if err != nil {
		return nil, err
	}
	if parent, err = filepath.EvalSymlinks(parent); err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, "repo")
	repo := fixtures.InitRepo(b, dir)
	for i := range 10 {
		repo.WriteFile(fmt.Sprintf("file-%d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	repo.Commit("ten files")
	if _, err := Init(ctx, dir, InitOptions{}); err != nil {
		return nil, err
	}
	p, err := Open(ctx, dir, Options{})
	if err != nil {
		return nil, err
	}
	if _, err := p.Allocate(ctx, AllocateOptions{Binding: "target"}); err != nil {
		return nil, err
	}
	target, err := p.records.Current("bench", "target")
	if err != nil {
		return nil, err
	}
	for n := range scaleWorkspaces() - 1 {
		benchWorkspace(b, p, fmt.Sprintf("W-%04d", n))
	}
	return &scaleFixture{dir: dir, p: p, target: target}, nil
}

// BenchmarkScale times the CLI against plain git with 1,000 workspaces
// in the repository, alternately in the same loop (x-git):
//
//   - allocate: `majlis workspace allocate` against `git worktree add`
//     (goal: at most 1.15x);
//   - list: `majlis workspace list` against `git worktree list` (goal: at
//     most 1.2x);
//   - preview: `majlis workspace reclaim --preview` against `git worktree
//     list` (goal: at most 1.2x).
//
// Each allocation adds a workspace, and each git worktree add a worktree:
// the count grows by a few during the run.
func BenchmarkScale(b *testing.B) {
	bin := majlisBinary(b)
	s := scaleRepository(b)
	plain := filepath.Join(filepath.Dir(s.dir), "plain")
	b.Run(fmt.Sprintf("allocate/workspaces=%d", scaleWorkspaces()), func(b *testing.B) {
		var ours, floor time.Duration
		n := 0
		for b.Loop() {
			n++
			ours += timed(b, s.dir, nil, bin, "workspace", "allocate", fmt.Sprintf("A-%d", n))
			floor += timed(b, s.dir, nil, "git", "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", n),
				filepath.Join(plain, fmt.Sprintf("G-%d", n)), "HEAD")
		}
		versus(b, n, ours, floor)
	})
	b.Run(fmt.Sprintf("list/workspaces=%d", scaleWorkspaces()), func(b *testing.B) {
		var ours, floor time.Duration
		n := 0
		for b.Loop() {
			n++
			ours += timed(b, s.dir, nil, bin, "workspace", "list")
			floor += timed(b, s.dir, nil, "git", "worktree", "list")
		}
		versus(b, n, ours, floor)
	})
	b.Run(fmt.Sprintf("preview/workspaces=%d", scaleWorkspaces()), func(b *testing.B) {
		var ours, floor time.Duration
		n := 0
		for b.Loop() {
			n++
			ours += timed(b, s.dir, nil, bin, "workspace", "reclaim", "target", "--preview")
			floor += timed(b, s.dir, nil, "git", "worktree", "list")
		}
		versus(b, n, ours, floor)
	})
}
