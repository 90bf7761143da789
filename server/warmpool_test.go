package server

import (
	"context"
	"fmt"
	"strings"
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

// TestServerPoolFillStopsAtTheBudget: the server's background fill stops
// before pool.max_bytes like pool fill, makes nothing past it, and says
// why once, not at every interval.
func TestServerPoolFillStopsAtTheBudget(t *testing.T) {
	e := newAPIEnv(t)
	for key, value := range map[string]string{provider.PolicyPoolSize: "2", provider.PolicyPoolMaxBytes: "1"} {
		if _, err := e.s.p.SetPolicy(context.Background(), key, value); err != nil {
			t.Fatal(err)
		}
	}
	var logged []string
	e.s.o.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
	last := ""
	for range 3 {
		if !e.s.poolOnce(context.Background(), time.Second, &last) {
			t.Fatal("the server is stopping")
		}
	}
	if l, err := e.s.p.PoolList(); err != nil || len(l.Pool) != 0 {
		t.Errorf("pool: %+v, %v; want nothing made past pool.max_bytes", l, err)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "pool.max_bytes (1)") {
		t.Errorf("logged %q, want the stop said once", logged)
	}
}
