package client_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/wire"
)

// ownerProcess starts a process that stands for an agent, killed when the
// test ends.
func ownerProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "600")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// killHard kills c as kill -9 does and waits until it is gone.
func killHard(t *testing.T, c *exec.Cmd) {
	t.Helper()
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.Wait()
}

// salvagedFile is file as the salvage ref ref keeps it.
func salvagedFile(t *testing.T, dir, ref, file string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "show", ref+":"+file).Output()
	if err != nil {
		t.Fatalf("%s on %s: %v", file, ref, err)
	}
	return string(out)
}

// TestCrashedAgentThroughClient is an orchestrator's whole job through
// package client alone: initialize the repository (Init runs 'majlis
// init'), start its server, begin a task owned by an agent's process,
// kill -9 the agent, see its workspace reclaimable in the list, reclaim
// the dead in bulk (one preview, its digest confirmed), find the work on
// the salvage ref and the leases recorded as recovered, and stop the
// server it started.
func TestCrashedAgentThroughClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := fixtures.NewRepo(t)
	r.WriteFile("src/a.go", "package src\n")
	r.Commit("one file")
	t.Cleanup(func() { stopServer(r.Dir) })

	if _, err := client.New(ctx, client.Options{Dir: r.Dir, Start: true}); err == nil {
		t.Fatal("New on an uninitialized repository: no error")
	} else if ce := (*client.Error)(nil); errors.As(err, &ce) {
		t.Fatalf("New is not Init: %v", err)
	}
	repo, err := client.Init(ctx, client.Options{Dir: r.Dir}, client.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := client.Init(ctx, client.Options{Dir: r.Dir}, client.InitOptions{}); err != nil || again.ID != repo.ID || repo.ID == "" {
		t.Fatalf("Init twice: %+v then %+v, %v; want the same registration", repo, again, err)
	}
	_, err = client.Init(ctx, client.Options{Dir: t.TempDir()}, client.InitOptions{})
	if ce := (*client.Error)(nil); !errors.As(err, &ce) || ce.Code != "not_a_repository" || ce.ExitCode == 0 {
		t.Fatalf("Init outside a repository: %v, want the command's refusal not_a_repository", err)
	}

	c, err := client.New(ctx, client.Options{Dir: r.Dir, Start: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	agent := ownerProcess(t)
	b, err := c.Begin(ctx, wire.BeginRequest{Task: "T-1", Paths: []string{"src/**"}, OwnerPID: agent.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Workspace.Path, "work.txt"), []byte("unsaved work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Heartbeat(ctx, wire.HeartbeatRequest{Holder: "T-1", Token: b.Token}); err != nil {
		t.Fatal(err)
	}
	killHard(t, agent)

	ws, err := c.List(ctx, false)
	if err != nil || len(ws) != 1 {
		t.Fatalf("list: %+v, %v", ws, err)
	}
	w := ws[0]
	if w.OwnerState != "exited" || w.Reclaimable == nil || !*w.Reclaimable || len(w.BlockedBy) != 0 ||
		w.Leases == nil || w.Leases.Count != 1 || !w.Leases.First[0].Recoverable {
		t.Fatalf("the crashed agent's workspace: owner %q, reclaimable %v, blocked by %+v, leases %+v; want exited, reclaimable, its lease recoverable",
			w.OwnerState, w.Reclaimable, w.BlockedBy, w.Leases)
	}

	bp, err := c.PreviewBulk(ctx, wire.SelectDead)
	if err != nil {
		t.Fatal(err)
	}
	if len(bp.Workspaces) != 1 || bp.Workspaces[0].Binding != "T-1" || bp.Workspaces[0].Preview == nil ||
		len(bp.Workspaces[0].Preview.RecoverLeases) != 1 || bp.Digest == "" {
		t.Fatalf("the bulk preview of the dead: %+v", bp)
	}
	if _, err := c.ReclaimBulk(ctx, wire.BulkReclaimRequest{Select: wire.SelectReleased, Confirm: bp.Digest}); err == nil {
		t.Fatal("the digest of --dead confirmed a reclaim of the released")
	}
	br, err := c.ReclaimBulk(ctx, wire.BulkReclaimRequest{Select: wire.SelectDead, Confirm: bp.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if br.Reclaimed != 1 || br.Failed != 0 || br.Workspaces[0].Status != "reclaimed" {
		t.Fatalf("bulk reclaim of the dead: %+v", br)
	}
	res := br.Workspaces[0].Result
	if res == nil || res.SalvageRef == nil || len(res.RecoveredLeases) != 1 || res.RecoveredLeases[0].ID != b.Leases[0].ID {
		t.Fatalf("T-1 reclaimed: %+v", res)
	}
	if got := salvagedFile(t, r.Dir, *res.SalvageRef, "work.txt"); got != "unsaved work\n" {
		t.Fatalf("the salvage keeps %q", got)
	}
	leases, err := c.Leases(ctx, wire.LeaseListRequest{Holder: "T-1", All: true})
	if err != nil || len(leases) != 1 || leases[0].State != wire.StateReleased || leases[0].Forced != nil {
		t.Fatalf("the crashed agent's lease: %+v, %v; want released as a recovery (not forced)", leases, err)
	}

	st, err := c.StopServer(ctx, client.StopOptions{})
	if err != nil || !st.Stopped {
		t.Fatalf("StopServer: %+v, %v", st, err)
	}
	if _, err := client.New(ctx, client.Options{Dir: r.Dir}); !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("after StopServer: %v, want no server", err)
	}
}
