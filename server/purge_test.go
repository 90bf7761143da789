package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
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

// A stop while the background purge runs: the purge is the server's work
// as a request is, so the stop cancels it, it ends at its safe point
// (salvaged, nothing deleted, its reservation released by its owner) and
// the stop waits for it before it gives the server lease up. The next
// purge finishes the job.
func TestStopDuringPurge(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	p, err := provider.Open(context.Background(), dir, provider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ws, err := p.Allocate(context.Background(), provider.AllocateOptions{Binding: "P-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws.Path, "notes.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(context.Background(), provider.ReclaimOptions{Binding: "P-1", Yes: true, KeepTrash: time.Nanosecond})
	if err != nil || res.TrashPath == "" {
		t.Fatalf("reclaim: %+v, %v", res, err)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	st := serveFailpoints(t, dir, tg, "purge/salvaged=wait("+gate+")")
	waitFile(t, gate+".reached")
	stopped := make(chan error, 1)
	go func() {
		res, err := serverctl.Stop(context.Background(), tg, serverctl.StopOptions{Timeout: childWait})
		if err == nil && !res.Stopped {
			err = fmt.Errorf("not stopped: %+v", res)
		}
		stopped <- err
	}()
	waitLive(t, st.Address, "the stop under way", func(l *wire.Live) bool { return !l.Ready })
	// The stop waits for the purge: the server lease is still its own.
	if rec := leaseRecord(t, tg); rec.Owner.PID != st.PID {
		t.Fatalf("the server lease changed hands while its purge ran: %+v", rec)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	leases := filepath.Join(tg.StateDir, "leases")
	if _, err := os.Stat(filepath.Join(leases, "reclaim.P-1.lease")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the purge's reservation is still held after the stop: %v", err)
	}
	if retired, _ := filepath.Glob(filepath.Join(leases, "retired", "reclaim.P-1.*")); len(retired) != 0 {
		t.Fatalf("the purge's reservation was recovered, not released by its owner: %v", retired)
	}
	if _, err := os.Stat(filepath.Join(res.TrashPath, "notes.txt")); err != nil {
		t.Fatalf("the purge a stop cut deleted the trash: %v", err)
	}
	kept, err := p.KeptTrash(context.Background())
	if err != nil || len(kept) != 1 || kept[0].HalfPurged {
		t.Fatalf("the kept trash after the stop (want whole, not half purged): %+v, %v", kept, err)
	}
	purged, err := p.PurgeDue(context.Background())
	if err != nil || len(purged.Purged) != 1 {
		t.Fatalf("the next purge: %+v, %v", purged, err)
	}
	if _, err := os.Lstat(res.TrashPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the trash is still there after the next purge: %v", err)
	}
}
