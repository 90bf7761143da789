package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/wire"
)

// TestPoolFillStopsAtTheBounds: a fill stops before one more pooled
// worktree would pass pool.max_bytes, the budget it shares with the kept
// trash (trash.max_bytes) or the free-space floor (trash.min_free), and
// says which; a fill stopped before its first makes nothing.
func TestPoolFillStopsAtTheBounds(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	est, err := gitops.CheckoutSize(t.Context(), p.reg.CommonDir, repo.Head())
	if err != nil || est <= 0 {
		t.Fatalf("checkout size %d, %v", est, err)
	}
	if _, err := p.SetPolicy(t.Context(), PolicyPoolMaxBytes, fmt.Sprint(est*3/2)); err != nil {
		t.Fatal(err)
	}
	res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 1 || res.Stopped == nil || res.Stopped.Reason != wire.PoolStopMaxBytes || !strings.Contains(res.Stopped.Message, "pool.max_bytes") {
		t.Fatalf("fill under pool.max_bytes: created %d, stopped %+v; want 1 made, then stopped for pool.max_bytes", len(res.Created), res.Stopped)
	}
	worktrees := worktreeCount(t, repo)
	for key, value := range map[string]string{PolicyPoolMaxBytes: "10GiB", PolicyTrashMaxBytes: fmt.Sprint(est / 2)} {
		if _, err := p.SetPolicy(t.Context(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ key, value, reason string }{
		{PolicyTrashMaxBytes, fmt.Sprint(est / 2), wire.PoolStopBudget},
		{PolicyTrashMaxBytes, "10GiB", ""},
		{PolicyTrashMinFree, "100%", wire.PoolStopFreeSpace},
	} {
		if _, err := p.SetPolicy(t.Context(), c.key, c.value); err != nil {
			t.Fatal(err)
		}
		if c.reason == "" {
			continue
		}
		res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Created) != 0 || res.Stopped == nil || res.Stopped.Reason != c.reason || !strings.Contains(res.Stopped.Message, c.reason) {
			t.Errorf("%s %s: created %d, stopped %+v; want nothing made, stopped for %s", c.key, c.value, len(res.Created), res.Stopped, c.reason)
		}
		if len(res.Pool) != 1 || worktreeCount(t, repo) != worktrees {
			t.Errorf("%s %s: the pool is %+v (%d worktrees, %d before)", c.key, c.value, res.Pool, worktreeCount(t, repo), worktrees)
		}
	}
}

// TestPurgeGivesThePoolBackFirst: when the kept trash and the pool
// together pass trash.max_bytes, the purge drains the oldest ready pooled
// worktree and keeps the trash whole; when the free space stays below
// trash.min_free with the pool empty, only then does the kept trash go
// early.
func TestPurgeGivesThePoolBackFirst(t *testing.T) {
	t.Parallel()
	_, p, clk := undoProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1", NoPool: true})
	peerDirty(t, w.Path)
	rec, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if err != nil {
		t.Fatal(err)
	}
	filled := &PoolResult{}
	for size := 1; size <= 2; size++ {
		clk.Add(time.Second) // the first made is the oldest
		res, err := p.PoolFill(t.Context(), PoolFillOptions{Size: size})
		if err != nil || len(res.Created) != 1 {
			t.Fatalf("fill: %+v, %v", res, err)
		}
		filled.Created = append(filled.Created, res.Created...)
	}
	kept, err := p.KeptTrash(t.Context())
	if err != nil || len(kept) != 1 || kept[0].SizeBytes <= 0 {
		t.Fatalf("kept trash %+v, %v", kept, err)
	}
	total := kept[0].SizeBytes
	for _, c := range filled.Created {
		n, err := gitops.TreeSize(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	files := crashCaptureFiles(t, rec.TrashPath)
	if p.PurgeMayBeDue() {
		t.Fatal("a purge may be due before anything is over the budget")
	}
	if _, err := p.SetTrashPolicy(PolicyTrashMaxBytes, fmt.Sprint(total-1)); err != nil {
		t.Fatal(err)
	}
	if !p.PurgeMayBeDue() {
		t.Error("the pool and the trash are over the budget and no purge may be due")
	}
	res, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.PoolDrained) != 1 || res.PoolDrained[0].Name != filled.Created[0].Name || len(res.Purged) != 0 || len(res.Left) != 0 {
		t.Fatalf("purge over the budget: %+v; want the oldest pooled worktree given back, the trash kept", res)
	}
	if diff := cmp.Diff(files, crashCaptureFiles(t, rec.TrashPath)); diff != "" {
		t.Errorf("the kept trash changed (-before +after):\n%s", diff)
	}
	if list, _ := p.PoolList(); len(list.Pool) != 1 || list.Pool[0].Name != filled.Created[1].Name || list.Pool[0].State != wire.PoolReady {
		t.Errorf("pool after: %+v, want the younger one ready", list.Pool)
	}
	// The floor cannot be met: the pool goes first, then the trash.
	if _, err := p.SetTrashPolicy(PolicyTrashMinFree, "100%"); err != nil {
		t.Fatal(err)
	}
	res, err = p.PurgeDue(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.PoolDrained) != 1 || res.PoolDrained[0].Name != filled.Created[1].Name || len(res.Purged) != 1 || res.Purged[0].Due != DueSpace {
		t.Fatalf("purge below the floor: %+v; want the pool given back, then the trash purged for space", res)
	}
}
