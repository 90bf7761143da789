package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/procid"
)

// The claims index an allocation reads before the publication lease
// (Prefetch) may be older than the records by the time the lease is
// held: another process may have published a claim, added an event,
// deleted or rewritten the index, or compacted a binding in between. What
// is read through that index must still be what the records say, and a
// claim overlapping one published in between must be refused.

// runChildOK runs the test binary as a child in mode and fails unless it
// ends as a child of that mode should.
func runChildOK(t *testing.T, mode string, killed bool, env ...string) {
	t.Helper()
	c := startChild(t, mode, env...)
	st := c.Wait()
	if killed && st.ExitCode() == -1 {
		return // claim-and-die: killed itself once its claim was published
	}
	if !st.Success() || killed {
		t.Fatalf("child %s: %v: %s", mode, st, c.Output())
	}
}

// sameThrough fails unless reading every binding through index gives
// what the records give.
func sameThrough(t *testing.T, p *Provider, what string, index func() map[string]*indexBinding) {
	t.Helper()
	_, viaIndex, errs, err := p.records.EachThrough(index)
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	_, fromFiles, errs, err := p.records.EachFromRecords()
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if diff := cmp.Diff(fromFiles, viaIndex, cmp.AllowUnexported(claimRecord{})); diff != "" {
		t.Fatalf("%s: through the index read before (-records +index):\n%s", what, diff)
	}
}

// publishThrough publishes, as allocate does, a claim of binding at path
// with the claims index that index gives.
func publishThrough(t *testing.T, p *Provider, binding, path, base string, index func() map[string]*indexBinding) error {
	t.Helper()
	c := Claim{Format: formatClaim, Binding: binding, RequestID: "req-" + binding, Path: path, PhysicalPath: path, CommonDir: p.reg.CommonDir,
		RepositoryID: p.reg.ID, Base: base, BaseRef: "HEAD", Branch: "majlis/" + binding, Intent: []string{},
		CreatedAt: p.now().UTC()}
	c.Allocator, _ = procid.Of(os.Getpid())
	args := requestArgs{Op: "allocate", Binding: binding, Base: "HEAD", Branch: c.Branch, Path: path, Intent: []string{}}
	_, err := p.publishClaim(t.Context(), c, args, nil, index)
	return err
}

// TestPrefetchedIndexNamesEveryPeer: 50 rounds; in each the index is
// read (and held) first, then other processes change the claims: a claim
// in a new binding; a claim published after the index was deleted (the
// publisher writes a new one); a claim read through an index that another
// process wrote in between; twice, an event (a release) in a
// binding the index holds. The stale index must read as the records do,
// and a claim inside the changed binding's path must be refused.
func TestPrefetchedIndexNamesEveryPeer(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	head := repo.Head()
	root := t.TempDir()
	rounds := fixtures.Rounds(25, 200)
	var live []string // released one by one, every 25th round
	for i := range max(2, rounds/25) {
		b := fmt.Sprintf("L-%02d", i)
		mustAllocate(t, p, AllocateOptions{Binding: b, Path: filepath.Join(root, b)})
		live = append(live, b)
	}
	env := func(binding, path string) []string {
		return []string{"MAJLIS_REPO=" + repo.Dir, "MAJLIS_BINDING=" + binding, "MAJLIS_PATH=" + path, "MAJLIS_BASE=" + head, "MAJLIS_REQUEST=req-" + binding}
	}
	for r := range rounds {
		settleIndex(t, p)
		stale := p.records.Prefetch()
		if stale() == nil {
			t.Fatal("no index to read")
		}
		binding, path := fmt.Sprintf("N-%02d", r), filepath.Join(root, fmt.Sprintf("n-%02d", r))
		var what string
		switch {
		case r%25 == 24:
			what = "an event in a binding the index holds"
			binding, live = live[0], live[1:]
			path = filepath.Join(root, binding)
			runChildOK(t, "release", false, env(binding, path)...)
		case r%3 == 0:
			what = "a claim in a new binding"
			runChildOK(t, "claim-and-die", true, env(binding, path)...)
		case r%3 == 1:
			what = "a claim published after the index was deleted"
			if err := os.Remove(p.records.indexPath()); err != nil {
				t.Fatal(err)
			}
			runChildOK(t, "claim-and-die", true, env(binding, path)...)
			if _, err := os.Lstat(p.records.indexPath()); err != nil {
				t.Fatalf("the publisher wrote no index: %v", err)
			}
		default:
			what = "a claim through an index another process wrote meanwhile"
			if err := os.Remove(p.records.indexPath()); err != nil {
				t.Fatal(err)
			}
			runChildOK(t, "claim-and-die", true, env(binding+"a", path+"a")...)
			runChildOK(t, "claim-and-die", true, env(binding, path)...)
		}
		what = fmt.Sprintf("round %d, %s", r, what)
		sameThrough(t, p, what, stale)
		if err := publishThrough(t, p, fmt.Sprintf("X-%02d", r), filepath.Join(path, "inner"), head, stale); !errors.Is(err, ErrNested) && !errors.Is(err, errJudgeAgain) {
			// errJudgeAgain: inside a created workspace, whose worktree
			// allocate then checks again (and refuses).
			t.Fatalf("%s: a claim inside %s's path: %v, want ErrNested", what, binding, err)
		}
	}
}

// TestPrefetchedIndexAcrossCompaction: gc compacts bindings (exchanging
// their folders) after an allocation read the index and before it holds
// the lease; then another process publishes into them. The stale index
// reads as the records do, and claims inside the new ones are refused.
func TestPrefetchedIndexAcrossCompaction(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	head := repo.Head()
	root := t.TempDir()
	const bindings = 3
	for i := range bindings {
		b := fmt.Sprintf("G-%d", i)
		mustAllocate(t, p, AllocateOptions{Binding: b})
		reclaimYes(t, p, b)
		mustAllocate(t, p, AllocateOptions{Binding: b, CheckoutBranch: "majlis/" + b})
		reclaimYes(t, p, b)
	}
	settleIndex(t, p)
	stale := p.records.Prefetch()
	if stale() == nil {
		t.Fatal("no index to read")
	}
	before := map[string]uint64{}
	for i := range bindings {
		before[fmt.Sprintf("G-%d", i)] = stale()[fmt.Sprintf("G-%d", i)].Dir.Ino
	}
	// gc deletes the merged branches first; the records go in a second run.
	compacted := 0
	for range 2 {
		pv := crashExec(t, bin, repo.Dir, nil, "gc", "--preview", "--record-age", "1ns", "--json")
		var out struct {
			Plan GCPlan `json:"gc_preview"`
		}
		pv.decode(t, &out)
		compacted += len(out.Plan.Records)
		if res := crashExec(t, bin, repo.Dir, nil, "gc", "--confirm", out.Plan.Digest, "--record-age", "1ns", "--json"); res.exit != 0 {
			t.Fatalf("gc\n%s", res)
		}
	}
	if compacted == 0 {
		t.Fatal("gc compacted nothing")
	}
	for b, ino := range before {
		if k, err := lstatKey(p.records.Dir(b)); err != nil || k.Ino == ino {
			t.Fatalf("%s's folder was not exchanged by gc (%v)", b, err)
		}
	}
	sameThrough(t, p, "after gc", stale)
	for i := range bindings {
		b := fmt.Sprintf("G-%d", i)
		path := filepath.Join(root, b)
		runChildOK(t, "claim-and-die", true, "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING="+b, "MAJLIS_PATH="+path, "MAJLIS_BASE="+head, "MAJLIS_REQUEST=req-"+b)
		sameThrough(t, p, "a claim in "+b+" after gc", stale)
		if err := publishThrough(t, p, "X-"+b, filepath.Join(path, "inner"), head, stale); !errors.Is(err, ErrNested) {
			t.Fatalf("a claim inside %s's new claim, after gc: %v, want ErrNested", b, err)
		}
	}
}

// TestAllocateSeesClaimPublishedAfterItsIndexRead: 50 allocations by
// the majlis binary, each stopped once git's worktrees are checked
// (allocate/checked: its claims index read, or being read, before the
// lease) while this process publishes a claim around its path, not
// created (so no git worktree shows it: only the claims do). Every one
// is refused as nested, and leaves no folder.
func TestAllocateSeesClaimPublishedAfterItsIndexRead(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	head := repo.Head()
	root := t.TempDir()
	mustAllocate(t, p, AllocateOptions{Binding: "warm", Path: filepath.Join(root, "warm")})
	settleIndex(t, p)
	rounds := fixtures.Rounds(20, 200)
	for r := range rounds {
		outer := filepath.Join(root, fmt.Sprintf("o-%02d", r))
		path := filepath.Join(outer, "inner")
		env, reached, release := crashPause(t, "allocate/checked")
		c := crashStart(t, bin, repo.Dir, env, "workspace", "allocate", fmt.Sprintf("A-%02d", r), "--path", path, "--json")
		reached()
		if err := publishThrough(t, p, fmt.Sprintf("O-%02d", r), outer, head, p.records.Index); err != nil {
			t.Fatal(err)
		}
		release()
		res := c.wait()
		if res.exit == 0 || res.errorCode() != "nested_workspace" {
			t.Fatalf("round %d: allocate inside a claim published after its index read:\n%s", r, res)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("round %d: the refused allocation made %s", r, path)
		}
	}
}
