package client_test

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchClient is a client of a started server for a fresh 10-file
// repository.
func benchClient(b *testing.B) (*client.Client, string) {
	b.Helper()
	dir := newRepo(b)
	c, err := client.New(context.Background(), client.Options{Dir: dir, Start: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c, dir
}

func runGit(b *testing.B, dir string, args ...string) time.Duration {
	b.Helper()
	t0 := time.Now()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return time.Since(t0)
}

// BenchmarkServerAllocate: allocating a workspace through the running
// server (client.Allocate: HTTP, claim, worktree, records) against `git
// worktree add -b` of the same commit, alternately, in a 10-file
// repository. Goal: at most 1.1x.
//
// records-ns/op is the floor under any allocation that survives a crash
// at every point: the five durable record writes it makes one after the
// other (the publication lease, the journal entry, the claim, the pin in
// git's worktree entry, the created event), each a file written, synced,
// linked into place and its folder synced, timed here on the same disk in
// the same loop. floor-ns/op is git plus that floor, and floor-x-git that
// against git: no allocation that keeps its records durable can be faster.
func BenchmarkServerAllocate(b *testing.B) {
	c, dir := benchClient(b)
	ctx := context.Background()
	root := filepath.Join(filepath.Dir(dir), "plain")
	recDir := filepath.Join(filepath.Dir(dir), "records")
	if err := durable.MkdirAll(recDir, 0o755); err != nil {
		b.Fatal(err)
	}
	record := bytes.Repeat([]byte("x"), 600) // about a claim's size
	var ours, floor, records time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := time.Now()
		if _, err := c.Allocate(ctx, wire.AllocateRequest{Binding: fmt.Sprintf("S-%d", n)}); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		floor += runGit(b, dir, "worktree", "add", "-q", "-b", fmt.Sprintf("g-%d", n), filepath.Join(root, fmt.Sprintf("G-%d", n)), "HEAD")
		t1 := time.Now()
		for i := range 5 {
			if err := durable.Publish(recDir, fmt.Sprintf("%d.%d", n, i), record); err != nil {
				b.Fatal(err)
			}
		}
		records += time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "majlis-ns/op")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "git-ns/op")
	b.ReportMetric(float64(records.Nanoseconds())/float64(n), "records-ns/op")
	b.ReportMetric(float64(ours)/float64(floor), "x-git")
	b.ReportMetric(float64((floor+records).Nanoseconds())/float64(n), "floor-ns/op")
	b.ReportMetric(float64(floor+records)/float64(floor), "floor-x-git")
}

// BenchmarkServerAcquire: a lease acquire through the running server
// against the same acquire by the CLI (`majlis lease acquire`, a process
// per call), alternately.
func BenchmarkServerAcquire(b *testing.B) {
	c, dir := benchClient(b)
	ctx := context.Background()
	var ours, cli time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := time.Now()
		if _, err := c.Acquire(ctx, wire.AcquireRequest{Holder: fmt.Sprintf("s-%d", n), Resources: []string{fmt.Sprintf("intent:s/%d/**", n)}}); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(t0)
		t1 := time.Now()
		if out, err := exec.Command(bin, "lease", "acquire", "--repo", dir, "--holder", fmt.Sprintf("c-%d", n), fmt.Sprintf("intent:c/%d/**", n)).CombinedOutput(); err != nil {
			b.Fatalf("majlis lease acquire: %v\n%s", err, out)
		}
		cli += time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "server-ns/op")
	b.ReportMetric(float64(cli.Nanoseconds())/float64(n), "cli-ns/op")
	b.ReportMetric(float64(ours)/float64(cli), "x-cli")
}

// BenchmarkMCPAcquire: a lease acquire as an agent makes it, the
// lease_acquire tool through 'majlis mcp' over stdio (the bridge, then the
// server's /mcp), against the same acquire by the CLI, alternately.
func BenchmarkMCPAcquire(b *testing.B) {
	_, dir := benchClient(b)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "test"}, nil).Connect(ctx,
		&mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--repo", dir)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	var ours, cli time.Duration
	n := 0
	for b.Loop() {
		n++
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lease_acquire",
			Arguments: map[string]any{"holder": fmt.Sprintf("m-%d", n), "resources": []string{fmt.Sprintf("intent:m/%d/**", n)}}})
		if err != nil || res.IsError {
			b.Fatalf("lease_acquire: %v %v", err, res)
		}
		ours += time.Since(t0)
		t1 := time.Now()
		if out, err := exec.Command(bin, "lease", "acquire", "--repo", dir, "--holder", fmt.Sprintf("c-%d", n), fmt.Sprintf("intent:c/%d/**", n)).CombinedOutput(); err != nil {
			b.Fatalf("majlis lease acquire: %v\n%s", err, out)
		}
		cli += time.Since(t1)
	}
	b.ReportMetric(float64(ours.Nanoseconds())/float64(n), "mcp-ns/op")
	b.ReportMetric(float64(cli.Nanoseconds())/float64(n), "cli-ns/op")
	b.ReportMetric(float64(ours)/float64(cli), "x-cli")
}
