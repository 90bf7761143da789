package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// The claims index's slack (readers let up to indexSlack bindings differ
// from the index before one writes a new one) against concurrent writers
// in other processes and an index that is deleted, corrupted, torn,
// replaced by an older one, and records that are damaged or removed
// between reads. In every round allocate, list and the reclaim preview's
// peer check must name every workspace the records name: a binding the
// index does not hold as it is must come from its records.
func TestClaimsIndexSlackCrossProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("allocates dozens of workspaces across processes")
	}
	rounds, perChild := fixtures.Rounds(30, 240), 30
	repo, p := newProvider(t)
	outer := mustAllocate(t, p, AllocateOptions{Binding: "outer"})
	// Bindings of this process, reclaimed: the index holds them, and the
	// rounds below damage and remove some.
	for i := range 20 {
		b := fmt.Sprintf("P-%02d", i)
		mustAllocate(t, p, AllocateOptions{Binding: b})
		if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: b, Yes: true}); err != nil {
			t.Fatal(err)
		}
	}
	settleIndex(t, p)
	p.records.eagerIndex = false
	var saved [][]byte // indexes as they were, to put back later (stale)
	snapshot := func() {
		if b, err := os.ReadFile(p.records.indexPath()); err == nil {
			saved = append(saved, b)
		}
	}
	snapshot()

	progress := filepath.Join(t.TempDir(), "progress")
	var children []*fixtures.Helper
	for _, prefix := range []string{"C", "D"} {
		children = append(children, startChild(t, "allocate-many", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING="+prefix,
			"MAJLIS_PATH="+filepath.Join(outer.Path, prefix), "MAJLIS_NESTED=1",
			fmt.Sprintf("MAJLIS_COUNT=%d", perChild), "MAJLIS_PROGRESS="+progress))
	}
	done := make(chan struct{})
	go func() {
		for _, c := range children {
			c.Wait()
		}
		close(done)
	}()
	finished := func() []string {
		data, err := os.ReadFile(progress)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		return strings.Fields(s[:strings.LastIndexByte(s, '\n')+1])
	}
	pathOf := func(b string) string {
		prefix, i, _ := strings.Cut(b, "-")
		return filepath.Join(outer.Path, prefix, i)
	}
	target := peerCurrent(t, p, "outer")
	removed := map[string]bool{} // P- bindings whose folder this test moved away
	var damaged string           // a P- binding whose claim is damaged now
	var damagedData []byte       // its claim as it was
	damages, liveDamaged := 0, false
	perturb := func(round int) {
		ix := p.records.indexPath()
		switch round % 8 {
		case 1:
			os.Remove(ix)
		case 2: // a byte flipped in the middle
			if b, err := os.ReadFile(ix); err == nil && len(b) > 40 {
				b[len(b)/2] ^= 0x55
				os.WriteFile(ix, b, 0o644)
			}
		case 3: // torn
			if b, err := os.ReadFile(ix); err == nil {
				os.WriteFile(ix, b[:len(b)*2/3], 0o644)
			}
		case 4: // the oldest index there was: every binding since is missing from it, and many changed
			writeIndex(t, p, saved[0])
		case 5: // a recent one
			writeIndex(t, p, saved[len(saved)-1])
		case 6: // damage a binding (in turn a reclaimed one of this process's and a live nested one), or undo the damage
			if damaged == "" {
				b := fmt.Sprintf("P-%02d", round%20)
				damages++
				if known := finished(); damages%2 == 0 && len(known) > 0 {
					b = known[0]
					liveDamaged = true
				}
				if removed[b] {
					return
				}
				f := filepath.Join(p.records.Dir(b), claimName(1, "claim"))
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				// The same size, the path in the body changed, the seal
				// kept (it names the claim in the journal, which locates
				// the workspace): the seal no longer matches the body.
				bad := append([]byte(nil), data...)
				i := strings.Index(string(bad), `"path":"/`) + len(`"path":"/`)
				if i < len(`"path":"/`) {
					t.Fatalf("no path in %s", data)
				}
				bad[i] ^= 0x20 // the case of the path's first letter
				if err := os.WriteFile(f, bad, 0o644); err != nil {
					t.Fatal(err)
				}
				damaged, damagedData = b, data
			} else {
				f := filepath.Join(p.records.Dir(damaged), claimName(1, "claim"))
				if err := os.WriteFile(f, damagedData, 0o644); err != nil {
					t.Fatal(err)
				}
				damaged = ""
			}
		case 7: // a reclaimed binding's records removed, as a compaction may
			b := fmt.Sprintf("P-%02d", (round/8)%20)
			if b != damaged && !removed[b] {
				if err := os.Rename(p.records.Dir(b), filepath.Join(t.TempDir(), b)); err != nil {
					t.Fatal(err)
				}
				removed[b] = true
			}
		}
	}
	checks := 0
	for exited := false; !exited || checks < rounds; checks++ {
		select {
		case <-done:
			exited = true
		default:
		}
		known := finished()
		before, err := p.readInventoryFromRecords()
		if err != nil {
			t.Fatal(err)
		}
		perturb(checks)
		if checks%5 == 0 {
			snapshot()
		}

		// The reclaim preview's peers.
		peers, err := p.retainedPeersFromClaims(t.Context(), target)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range known {
			if pr := peerFind(peers, PeerWorkspace, pathOf(b)); pr == nil || !pr.Overlaps || pr.Binding != b {
				t.Fatalf("round %d: %s was allocated before the round, but the peers are %+v", checks, b, peers)
			}
		}
		// Every record read before the round is read again, with the
		// same digest and no fewer events (nobody but this test removes
		// any); the damaged binding is damaged, the removed ones gone.
		inv, err := p.readInventory()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*claimRecord{}
		for _, recs := range inv.good {
			for _, r := range recs {
				got[fmt.Sprintf("%s#%d", r.Claim.Binding, r.Claim.Seq)] = r
			}
		}
		for _, recs := range before.good {
			for _, r := range recs {
				b := r.Claim.Binding
				if removed[b] || b == damaged {
					continue
				}
				g := got[fmt.Sprintf("%s#%d", b, r.Claim.Seq)]
				if g == nil || g.Digest != r.Digest || g.Claim.Path != r.Claim.Path {
					t.Fatalf("round %d: %s #%d read from the records before the round is %+v through the index", checks, b, r.Claim.Seq, g)
				}
				for kind := range r.Events {
					if !g.has(kind) {
						t.Fatalf("round %d: %s #%d lost its %s event through the index", checks, b, r.Claim.Seq, kind)
					}
				}
			}
		}
		for b := range removed {
			if _, ok := got[b+"#1"]; ok {
				t.Fatalf("round %d: %s, whose records are gone, is still read", checks, b)
			}
		}
		if damaged != "" {
			if _, ok := got[damaged+"#1"]; ok {
				t.Fatalf("round %d: %s, whose claim is damaged, is read as good", checks, damaged)
			}
			found := false
			for _, d := range inv.damaged {
				found = found || d.Binding == damaged
			}
			if !found {
				t.Fatalf("round %d: %s, whose claim is damaged, is not reported damaged: %+v", checks, damaged, inv.damaged)
			}
		}
		// list names every workspace allocated before the round.
		wss, err := p.List(t.Context(), ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]string{}
		for _, w := range wss {
			listed[w.Binding] = w.Path
		}
		for _, b := range known {
			if listed[b] != pathOf(b) {
				t.Fatalf("round %d: list does not show %s at %s: %v", checks, b, pathOf(b), listed)
			}
		}
		// allocate refuses a path inside the newest of them.
		if len(known) > 0 {
			b := known[len(known)-1]
			_, err := p.Allocate(t.Context(), AllocateOptions{Binding: fmt.Sprintf("X-%d", checks), Path: filepath.Join(pathOf(b), "x")})
			if !errors.Is(err, ErrNested) {
				t.Fatalf("round %d: an allocation inside %s (%s) was not refused as nested: %v", checks, b, pathOf(b), err)
			}
		}
	}
	for _, c := range children {
		if r := result(c); !r.OK {
			t.Fatalf("an allocating process failed: %+v", r)
		}
	}
	if got := len(finished()); got != 2*perChild {
		t.Fatalf("%d allocations finished, want %d", got, 2*perChild)
	}
	if damaged != "" {
		perturb(6) // undone
	}
	if !liveDamaged {
		t.Fatal("no live workspace's claim was damaged in the rounds")
	}
	settleIndex(t, p)
	sameAsRecords(t, p)
	t.Logf("%d rounds", checks)
}
