package provider

import (
	"errors"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// TestPoolSubmodules: a fill at a base with submodules is refused and
// makes nothing (no claim, no worktree); an allocation at such a base
// does not take a pooled worktree (reason submodules), and one made at a
// base without submodules stays ready for another allocation.
func TestPoolSubmodules(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	plain := repo.Head()
	repo.AddSubmodule("lib", fixtures.NewRepo(t))
	withSub := repo.Head()
	before := worktreeCount(t, repo)
	_, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1})
	var perr *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &perr) || perr.Hint == "" {
		t.Fatalf("fill at a base with submodules: %v", err)
	}
	if n := worktreeCount(t, repo); n != before {
		t.Errorf("the refused fill made %d worktree(s)", n-before)
	}
	if bs, _ := p.records.Bindings(); len(bs) != 0 {
		t.Errorf("the refused fill left records: %v", bs)
	}
	if _, err := p.PoolFill(t.Context(), PoolFillOptions{Size: 1, Base: plain}); err != nil {
		t.Fatalf("fill at a base without submodules: %v", err)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Base: withSub})
	if ws.Pool == nil || ws.Pool.Used || ws.Pool.Reason != "submodules" {
		t.Errorf("allocate at a base with submodules: pool %+v", ws.Pool)
	}
	if l, _ := p.PoolList(); len(l.Pool) != 1 || l.Pool[0].State != wire.PoolReady {
		t.Errorf("pool after it: %+v", l)
	}
	if w := mustAllocate(t, p, AllocateOptions{Binding: "T-2", Base: plain}); w.Pool == nil || !w.Pool.Used {
		t.Errorf("allocate at the pool's base: pool %+v", w.Pool)
	}
}
