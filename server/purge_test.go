package server

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// TestServerPurgesDueTrash: with the repository's server running, a kept
// trash folder whose time is up is purged in the background (salvaged
// first, then deleted), with no command asking for it.
func TestServerPurgesDueTrash(t *testing.T) {
	dir, tg := testRepo(t)
	p, err := provider.Open(context.Background(), dir, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ws, err := p.Allocate(context.Background(), provider.AllocateOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ws.Path+"/notes.txt", []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(context.Background(), provider.ReclaimOptions{Binding: "T-1", Yes: true, KeepTrash: time.Nanosecond})
	if err != nil || res.TrashPath == "" {
		t.Fatalf("reclaim: %+v, %v", res, err)
	}
	startServer(t, dir, tg)
	deadline := time.Now().Add(childWait)
	for {
		_, err := os.Lstat(res.TrashPath)
		kept, kerr := p.KeptTrash(context.Background())
		if errors.Is(err, os.ErrNotExist) && kerr == nil && len(kept) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not purge the due trash %s (%v); kept: %+v, %v", res.TrashPath, err, kept, kerr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, err := p.List(context.Background(), provider.ListOptions{All: true})
	if err != nil || len(list) != 1 || list[0].TrashPurged != provider.DueExpired {
		t.Errorf("list --all after the background purge: %+v, %v", list, err)
	}
}
