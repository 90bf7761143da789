package provider

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
)

// startProcess starts a process that waits, in dir ("" for here), killed
// when the test ends.
func startProcess(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "600")
	c.Dir = dir
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

func lookAt(t *testing.T, p *Provider, binding string) *Workspace {
	t.Helper()
	ws, err := p.List(t.Context(), ListOptions{Look: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Binding == binding {
			return w
		}
	}
	t.Fatalf("%s is not listed", binding)
	return nil
}

// A crashed agent: begun with its process as owner, killed with SIGKILL,
// nothing released. Its leases' owner is proven dead, so list calls the
// workspace reclaimable, --dead takes it and retires its leases as
// recovered, its work on a salvage ref. An agent whose dev server still
// runs in its workspace is left out of --dead, and reclaimed alone once
// its own preview is confirmed. A holder that records no owner stays
// blocked, saying how to resolve it.
func TestCrashedAgentReclaimedByDead(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	ctx := t.Context()
	crashed, served := startProcess(t, ""), startProcess(t, "")
	res1, err := p.Begin(ctx, BeginOptions{Task: "T-1", Paths: []string{"src/**"}, OwnerPID: crashed.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(res1.Workspace.Path, "work.txt"), []byte("unsaved work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res2, err := p.Begin(ctx, BeginOptions{Task: "T-2", Paths: []string{"web/**"}, OwnerPID: served.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	devServer := startProcess(t, res2.Workspace.Path) // started by the agent, it survives it
	// T-3's holder records no owner process; its lease expires unreleased.
	if _, err := p.Begin(ctx, BeginOptions{Task: "T-3", Paths: []string{"docs/**"}, TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	killHard(t, crashed)
	killHard(t, served)

	w1 := lookAt(t, p, "T-1")
	if w1.OwnerState != "exited" || w1.Reclaimable == nil || !*w1.Reclaimable || len(w1.BlockedBy) != 0 {
		t.Fatalf("the crashed agent's workspace: owner %q, reclaimable %v, blocked by %+v; want exited, reclaimable", w1.OwnerState, w1.Reclaimable, w1.BlockedBy)
	}
	if w1.Leases == nil || w1.Leases.Count != 1 || !w1.Leases.First[0].Recoverable {
		t.Fatalf("the crashed agent's leases: %+v, want one, recoverable", w1.Leases)
	}
	w2 := lookAt(t, p, "T-2")
	if *w2.Reclaimable || len(w2.BlockedBy) != 1 || w2.BlockedBy[0].Kind != BlockProcesses ||
		len(w2.Processes) == 0 || w2.Processes[0].PID != devServer.Process.Pid || !strings.Contains(w2.BlockedBy[0].Hint, "--confirm") {
		t.Fatalf("the workspace of a dev server that survived its agent: processes %+v, blocked by %+v", w2.Processes, w2.BlockedBy)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		w3 := lookAt(t, p, "T-3")
		if len(w3.BlockedBy) == 1 && w3.BlockedBy[0].Leases[0].State == string(admission.StateQuarantined) {
			if b := w3.BlockedBy[0]; b.Kind != BlockLeases || !strings.Contains(b.Hint, "--writer-stopped") || *w3.Reclaimable {
				t.Fatalf("an expired lease with no owner: %+v, want blocked by leases with a hint to resolve it", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("T-3's lease never expired: %+v", w3.BlockedBy)
		}
	}

	bp, err := p.PreviewBulkReclaim(ctx, SelectDead)
	if err != nil {
		t.Fatal(err)
	}
	if len(bp.Workspaces) != 2 || bp.Workspaces[0].Binding != "T-1" || bp.Workspaces[1].Binding != "T-2" {
		t.Fatalf("--dead selects %+v, want T-1 and T-2", bp.Workspaces)
	}
	if pv := bp.Workspaces[0].Preview; pv == nil || len(pv.RecoverLeases) != 1 || len(pv.Processes) != 0 {
		t.Fatalf("T-1 in the --dead preview: %+v (%v)", pv, bp.Workspaces[0].Refused)
	}
	if err := bp.Workspaces[1].Refused; !errors.Is(err, ErrWorkspaceLive) || !strings.Contains(err.Error(), "is dead, but processes") {
		t.Fatalf("T-2 in the --dead preview: %v, want it left out for its dev server", err)
	}
	br, err := p.BulkReclaim(ctx, BulkOptions{Select: SelectDead, Confirm: bp.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if br.Reclaimed != 1 || br.Failed != 1 {
		t.Fatalf("bulk --dead: %+v", br)
	}
	r1 := br.Workspaces[0].Result
	if r1 == nil || r1.SalvageRef == nil || len(r1.RecoveredLeases) != 1 || r1.RecoveredLeases[0].ID != res1.Leases[0].ID {
		t.Fatalf("T-1 reclaimed: %+v", r1)
	}
	svc, err := p.Admission(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	all, err := svc.List(ctx, admission.ListRequest{Holder: "T-1", All: true})
	if err != nil || len(all) != 1 || all[0].State != admission.StateReleased || all[0].Forced != nil {
		t.Fatalf("the crashed agent's lease after --dead: %+v, %v; want released (recovered)", all, err)
	}
	if _, err := os.Stat(res2.Workspace.Path); err != nil {
		t.Fatalf("the dev server's workspace was touched: %v", err)
	}

	// Alone, its own preview confirmed, it is reclaimed.
	pv, err := p.PreviewReclaim(ctx, "T-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Processes) == 0 || pv.Processes[0].PID != devServer.Process.Pid {
		t.Fatalf("the preview names processes %+v, want the dev server %d", pv.Processes, devServer.Process.Pid)
	}
	r2, err := p.Reclaim(ctx, ReclaimOptions{Binding: "T-2", Confirm: pv.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if len(r2.RecoveredLeases) != 1 {
		t.Fatalf("T-2 reclaimed alone: %+v", r2)
	}
}
