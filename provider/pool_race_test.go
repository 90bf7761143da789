package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestPoolAllocationRace: eight `majlis workspace allocate` processes
// race for three pooled worktrees, released at once (a barrier, no
// sleep): each pooled worktree goes to exactly one, the five others make
// their workspace with git and say why (the pool is empty), and every
// workspace ends with its base, its branch and the files of a fresh
// checkout, clean. Nothing is left in the pool, and doctor finds
// nothing. Rounds: fixtures.Rounds (many more under a soak).
func TestPoolAllocationRace(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t) // its failpoints are not armed: the majlis users run
	for round := range fixtures.Rounds(3, 40) {
		poolRaceRound(t, bin, round)
		if t.Failed() {
			return
		}
	}
}

// poolRaceRound runs one round of TestPoolAllocationRace in a new
// repository.
func poolRaceRound(t *testing.T, bin string, round int) {
	repo, p, _, b := poolScene(t, 3)
	l, err := p.PoolList()
	if err != nil || len(l.Pool) != 3 {
		t.Fatalf("round %d: pool before the race: %+v, %v", round, l, err)
	}
	var pooled []string
	for _, w := range l.Pool {
		pooled = append(pooled, w.Name)
	}
	slices.Sort(pooled)
	fresh := filepath.Join(fixtures.TempDir(t), "fresh")
	repo.Git("worktree", "add", "-q", "--detach", fresh, b)
	want := treeFiles(t, fresh)
	repo.Git("worktree", "remove", fresh)

	outs := raceAllocations(t, bin, repo.Dir, 8, func(i int) []string {
		return []string{"workspace", "allocate", fmt.Sprintf("T-%d", i), "--base", b, "--json"}
	})
	var used []string
	for i, out := range outs {
		var res struct {
			Workspace Workspace `json:"workspace"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Workspace.Pool == nil {
			t.Fatalf("round %d: allocate T-%d printed %q (%v)", round, i, out, err)
		}
		w, use := res.Workspace, res.Workspace.Pool
		switch {
		case use.Used:
			used = append(used, use.Name)
		case use.Reason != "empty":
			t.Errorf("round %d: %s not from the pool: %+v, want reason empty", round, w.Binding, use)
		}
		st := strings.TrimSpace(gitOut(t, w.Path, "status", "--porcelain", "--ignored", "-uall"))
		br := strings.TrimSpace(gitOut(t, w.Path, "symbolic-ref", "HEAD"))
		head := strings.TrimSpace(gitOut(t, w.Path, "rev-parse", "HEAD"))
		if st != "" || br != "refs/heads/majlis/"+w.Binding || head != b {
			t.Errorf("round %d: %s (pool %+v): status %q, HEAD %s on %s", round, w.Binding, use, st, head, br)
		}
		if got := treeFiles(t, w.Path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: %s (pool %+v) has other files than a fresh checkout:\n%v\nwant %v", round, w.Binding, use, got, want)
		}
	}
	slices.Sort(used)
	if !slices.Equal(used, pooled) {
		t.Errorf("round %d: pooled worktrees handed out %v, want each of %v once", round, used, pooled)
	}
	if l, err := p.PoolList(); err != nil || len(l.Pool) != 0 {
		t.Errorf("round %d: pool after the race: %+v, %v", round, l, err)
	}
	if n := worktreeCount(t, repo); n != 9 {
		t.Errorf("round %d: %d worktrees, want the main one and eight workspaces", round, n)
	}
	if rep, err := p.Doctor(t.Context()); err != nil || !rep.OK {
		t.Errorf("round %d: doctor: %+v, %v", round, rep, err)
	}
}

// raceAllocations runs n majlis processes in dir, process i with
// args(i), all released at once: each starts under a shell that says it
// is ready and then waits for the end of a pipe the test closes once all
// are ready, then becomes majlis (exec). It returns what each printed,
// failing the test when one failed.
func raceAllocations(t *testing.T, bin, dir string, n int, args func(i int) []string) []string {
	t.Helper()
	startR, startW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer startR.Close()
	defer startW.Close()
	defer readyR.Close()
	const barrier = `printf x >&4; exec 4>&-; read x <&3; exec 3<&-; exec "$0" "$@"`
	cmds := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	errs := make([]*bytes.Buffer, n)
	for i := range cmds {
		c := exec.Command("/bin/sh", append([]string{"-c", barrier, bin}, args(i)...)...)
		outs[i], errs[i] = &bytes.Buffer{}, &bytes.Buffer{}
		c.Dir, c.Stdout, c.Stderr = dir, outs[i], errs[i]
		c.ExtraFiles = []*os.File{startR, readyW}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		cmds[i] = c
	}
	readyW.Close() // the shells hold the only write ends: a dead one cannot hang the read
	got, err := io.ReadAtLeast(readyR, make([]byte, n), n)
	if err != nil {
		t.Fatalf("%d of %d processes ready: %v", got, n, err)
	}
	startW.Close() // every shell's read ends at once
	res := make([]string, n)
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("majlis %s: %v\n%s%s", strings.Join(args(i), " "), err, outs[i], errs[i])
		}
		res[i] = outs[i].String()
	}
	if t.Failed() {
		t.FailNow()
	}
	return res
}
