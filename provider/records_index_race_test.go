package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// Another process allocates workspaces nested in a target, one after
// another, while this one allocates and reclaims workspaces of its own and
// reads through the claims index: every read that starts after an
// allocation returned names that workspace (an overlapping peer of the
// target), and every claim the index gives is the claim on disk. Both
// processes write the index.
func TestClaimsIndexCrossProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("allocates and reclaims dozens of workspaces across processes")
	}
	rounds := fixtures.Rounds(25, 200)
	repo, p := newProvider(t)
	outer := mustAllocate(t, p, AllocateOptions{Binding: "outer"})
	progress := filepath.Join(t.TempDir(), "progress")
	c := startChild(t, "allocate-many", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=C", "MAJLIS_PATH="+filepath.Join(outer.Path, "nested"),
		"MAJLIS_NESTED=1", fmt.Sprintf("MAJLIS_COUNT=%d", rounds), "MAJLIS_PROGRESS="+progress)
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	target := peerCurrent(t, p, "outer")

	finished := func() []string {
		data, err := os.ReadFile(progress)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		s = s[:strings.LastIndexByte(s, '\n')+1] // whole lines only
		return strings.Fields(s)
	}
	checks, mine := 0, 0
	for exited := false; !exited || checks < rounds; checks++ {
		select {
		case <-done:
			exited = true
		default:
		}
		known := finished()
		// The preview's peers, through the index.
		peers, err := p.retainedPeersFromClaims(t.Context(), target)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range known {
			i := strings.TrimPrefix(b, "C-")
			path := filepath.Join(outer.Path, "nested", i)
			if pr := peerFind(peers, PeerWorkspace, path); pr == nil || !pr.Overlaps || pr.Binding != b {
				t.Fatalf("check %d: %s was allocated before the check began, but the peers through the index are %+v", checks, b, peers)
			}
		}
		// Every claim through the index is the claim in its file.
		inv, err := p.readInventory()
		if err != nil {
			t.Fatal(err)
		}
		if len(inv.damaged) != 0 {
			t.Fatalf("check %d: damaged %+v", checks, inv.damaged)
		}
		for _, recs := range inv.good {
			for _, r := range recs {
				var c Claim
				digest, err := readRecord(filepath.Join(p.records.Dir(r.Claim.Binding), claimName(r.Claim.Seq, "claim")), "claim", formatClaim, &c)
				if err != nil || digest != r.Digest || c.Path != r.Claim.Path {
					t.Fatalf("check %d: %s #%d through the index is %s at %s; on disk %s at %s (%v)", checks,
						r.Claim.Binding, r.Claim.Seq, r.Digest, r.Claim.Path, digest, c.Path, err)
				}
			}
		}
		// A workspace of this process's own, allocated and reclaimed while
		// the other process allocates.
		if !exited {
			b := fmt.Sprintf("P-%02d", mine)
			mine++
			mustAllocate(t, p, AllocateOptions{Binding: b})
			if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: b, Yes: true}); err != nil {
				t.Fatalf("reclaim %s: %v", b, err)
			}
		}
	}
	if r := result(c); !r.OK {
		t.Fatalf("the allocating process failed: %+v", r)
	}
	if got := len(finished()); got != rounds {
		t.Fatalf("%d allocations finished, want %d", got, rounds)
	}
	// At rest, the index holds every binding and agrees with the records.
	settleIndex(t, p)
	sameAsRecords(t, p)
	t.Logf("%d checks; %d workspaces allocated and reclaimed meanwhile", checks, mine)
}

// A process killed after publishing a claim, before any index could
// follow it, and one killed between writing a new index and putting it in
// place: the next reader reads the claim from its records and writes an
// index that holds it.
func TestClaimsIndexCrash(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	settleIndex(t, p)
	for _, fp := range []string{"allocate/claimed", "claims-index/write"} {
		t.Run(fp, func(t *testing.T) {
			binding := "K-" + strings.ReplaceAll(fp, "/", "-")
			var run crashRun
			if fp == "allocate/claimed" {
				run = crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}, "workspace", "allocate", binding)
			} else {
				mustAllocate(t, p, AllocateOptions{Binding: binding})
				// With no index, the first reader writes one.
				if err := os.Remove(p.records.indexPath()); err != nil {
					t.Fatal(err)
				}
				// The crash comes in the first read of every binding that
				// finds one to read again.
				run = crashExec(t, bin, repo.Dir, []string{"MAJLIS_FAILPOINTS=" + fp + "=crash"}, "workspace", "list", "--json")
			}
			if !run.killed {
				t.Fatalf("not killed at %s:\n%s", fp, run)
			}
			leftovers, _ := filepath.Glob(filepath.Join(p.stateDir, ".claims.index-*.tmp"))
			for _, l := range leftovers { // as if it had been there a while
				old := time.Now().Add(-2 * staleIndexAge)
				if err := os.Chtimes(l, old, old); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, err := p.readInventory(); err != nil {
					t.Fatal(err)
				}
				if idx := p.records.Index(); idx[binding] != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the index never came to hold %s", binding)
				}
			}
			sameAsRecords(t, p)
			ws, err := p.List(t.Context(), ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, w := range ws {
				found = found || w.Binding == binding
			}
			if !found {
				t.Errorf("%s is not listed", binding)
			}
			if fp == "claims-index/write" && len(leftovers) == 0 {
				t.Errorf("no temporary index was left by the crash (the failpoint did not fire where expected)")
			}
			for _, l := range leftovers {
				if _, err := os.Lstat(l); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the crashed writer's %s is still there after a new index was written: %v", filepath.Base(l), err)
				}
			}
		})
	}
}
