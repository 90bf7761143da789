package server

import (
	"context"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
)

// TestServerKeepsPoolFilled: with pool.size set and the repository's
// server running, the warm pool is filled in the background, with no
// command asking for it; an allocation then takes a pooled worktree.
func TestServerKeepsPoolFilled(t *testing.T) {
	dir, tg := testRepo(t)
	p, err := provider.Open(context.Background(), dir, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.SetPolicy(context.Background(), provider.PolicyPoolSize, "1"); err != nil {
		t.Fatal(err)
	}
	startServer(t, dir, tg)
	deadline := time.Now().Add(childWait)
	for {
		l, err := p.PoolList()
		if err == nil && len(l.Pool) == 1 && l.Pool[0].State == wire.PoolReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not fill the pool: %+v, %v", l, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ws, err := p.Allocate(context.Background(), provider.AllocateOptions{Binding: "T-1"})
	if err != nil || ws.Pool == nil || !ws.Pool.Used {
		t.Fatalf("allocate: %+v, %v", ws, err)
	}
}
