package provider

// Coordination between admission and reclaim: a lease in a checkout being
// reclaimed is refused, reclaim sees every ledger, and a released
// workspace's owner pid no longer keeps it.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// TestAdmissionRefusesCheckoutBeingReclaimed pauses a reclaim after its
// reservation is registered, and after its last check before the move,
// and asks for a lease in the workspace meanwhile: refused (exit 4,
// reclaiming, naming the reservation), and the reclaim then finishes with
// no lease granted in the checkout it removed.
func TestAdmissionRefusesCheckoutBeingReclaimed(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, point := range []string{"reclaim/reserved", "reclaim/before-move"} {
		t.Run(strings.ReplaceAll(point, "/", "-"), func(t *testing.T) {
			repo, p := newProvider(t)
			ws := mustAllocate(t, p, AllocateOptions{Binding: "T-9"})
			pause, reached, release := crashPause(t, point)
			reclaim := crashStart(t, bin, repo.Dir, pause, "workspace", "reclaim", "T-9", "--yes", "--json")
			reached()
			acq := crashExec(t, bin, ws.Path, nil, "lease", "acquire", "--holder", "T-9", "intent:**", "--json")
			release()
			rr := reclaim.wait()
			if acq.exit != 4 || acq.errorCode() != "reclaiming" {
				t.Errorf("lease acquire in the checkout being reclaimed: want exit 4, code reclaiming\n%s", acq)
			}
			if !strings.Contains(acq.stdout, "reclaim.T-9") {
				t.Errorf("the refusal does not name the reservation reclaim.T-9\n%s", acq)
			}
			if rr.exit != 0 {
				t.Fatalf("the reclaim did not finish\n%s", rr)
			}
			svc, err := p.Admission(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			if ls, err := svc.List(t.Context(), admission.ListRequest{All: true}); err != nil || len(ls) != 0 {
				t.Errorf("leases after the refused acquire: %+v, %v; want none", ls, err)
			}
		})
	}
}

// TestAdmissionRacesReclaim races, 50 times, a reclaim of a workspace with
// a lease acquired in it (every other round, asked for once the reclaim's
// reservation exists): never both. A lease granted must have stopped the
// reclaim; a reclaim that removed the workspace must have refused the lease.
func TestAdmissionRacesReclaim(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	svc, err := p.Admission(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	rounds := fixtures.Rounds(20, 200)
	granted, reclaimed := 0, 0
	for i := range rounds {
		binding := fmt.Sprintf("R-%d", i)
		ws := mustAllocate(t, p, AllocateOptions{Binding: binding})
		os.WriteFile(filepath.Join(ws.Path, ".env"), []byte("secret\n"), 0o600)
		var wg sync.WaitGroup
		var aerr, rerr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				// Every other round, the lease is asked for once the
				// reclaim holds its reservation, or has finished.
				for {
					if _, err := p.leases.Inspect(reclaimPrefix + binding); err == nil {
						break
					}
					if _, err := os.Lstat(ws.Path); err != nil {
						break
					}
					runtime.Gosched()
				}
			}
			_, aerr = svc.Acquire(t.Context(), admission.AcquireRequest{Holder: "other-" + binding,
				Resources: []string{"intent:**"}, Checkout: ws.Path, Cwd: ws.Path})
		}()
		go func() {
			defer wg.Done()
			_, rerr = p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Yes: true})
		}()
		wg.Wait()
		if aerr == nil && rerr == nil {
			t.Fatalf("round %d: the lease was granted and the workspace reclaimed", i)
		}
		if aerr == nil {
			granted++
			if !errors.Is(rerr, ErrWorkspaceLive) {
				t.Fatalf("round %d: the lease was granted, the reclaim failed otherwise: %v", i, rerr)
			}
			if _, err := os.Stat(filepath.Join(ws.Path, ".env")); err != nil {
				t.Fatalf("round %d: the lease holder's .env is gone: %v", i, err)
			}
		}
		if rerr == nil {
			reclaimed++
		}
	}
	t.Logf("%d rounds: %d leases granted first, %d reclaims first", rounds, granted, reclaimed)
}

// TestLivenessReadsHostLedgerWithoutRepositoryLedger deletes the
// repository ledger while the workspace's task holds a host lease: the
// reclaim still refuses (the host ledger is read); and a host ledger
// that cannot be read refuses, it never means "no leases".
func TestLivenessReadsHostLedgerWithoutRepositoryLedger(t *testing.T) {
	t.Parallel()
	repo, _ := newProvider(t)
	host := filepath.Join(t.TempDir(), "host.db")
	p, err := Open(t.Context(), repo.Dir, Options{HostLedger: host})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-3"})
	svc, err := p.Admission(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if svc.HostLedger() != host {
		t.Fatalf("admission opened host ledger %s, want Options.HostLedger %s", svc.HostLedger(), host)
	}
	if _, err := svc.Acquire(t.Context(), admission.AcquireRequest{Holder: "T-3", Resources: []string{"host:port:3000"}, Cwd: ws.Path}); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	for _, f := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(p.stateDir, admission.RepositoryLedgerName+f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	fresh, err := Open(t.Context(), p.Worktree(), Options{HostLedger: host})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.PreviewReclaim(t.Context(), "T-3"); !errors.Is(err, ErrWorkspaceLive) || !strings.Contains(err.Error(), "host:port:3000") {
		t.Fatalf("preview with the host lease held and no repository ledger: %v, want workspace_live naming host:port:3000", err)
	}
	if _, err := fresh.Reclaim(t.Context(), ReclaimOptions{Binding: "T-3", Yes: true}); !errors.Is(err, ErrWorkspaceLive) {
		t.Fatalf("reclaim with the host lease held and no repository ledger: %v, want workspace_live", err)
	}
	if _, err := os.Stat(ws.Path); err != nil {
		t.Fatalf("the workspace is gone: %v", err)
	}

	// A host ledger that is not a ledger refuses.
	bad := filepath.Join(t.TempDir(), "bad.db")
	if err := os.WriteFile(bad, []byte("not a database, but something\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Open(t.Context(), p.Worktree(), Options{HostLedger: bad})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := again.PreviewReclaim(t.Context(), "T-3"); !errors.Is(err, admission.ErrMalformed) {
		t.Fatalf("preview with an unreadable host ledger: %v, want a malformed-ledger refusal", err)
	}
}

// TestReleaseEndsOwnerPidLiveness allocates a workspace with a live owner
// process, releases it, and reclaims it while that process still runs.
func TestReleaseEndsOwnerPidLiveness(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	mustAllocate(t, p, AllocateOptions{Binding: "T-5", OwnerPID: owner.Process.Pid})
	if _, err := p.PreviewReclaim(t.Context(), "T-5"); !errors.Is(err, ErrWorkspaceLive) {
		t.Fatalf("preview while the owner runs, before release: %v, want workspace_live", err)
	}
	if _, err := p.Release(t.Context(), "T-5", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PreviewReclaim(t.Context(), "T-5"); err != nil {
		t.Fatalf("preview after release, the owner still running: %v", err)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-5", Yes: true}); err != nil {
		t.Fatalf("reclaim after release, the owner still running: %v", err)
	}
}

// TestRacingAllocationsNeverNest races, 50 times, `allocate P --path p`
// with `allocate Q --path p/sub` (no --allow-nested), as two processes:
// never both.
func TestRacingAllocationsNeverNest(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	root := filepath.Join(filepath.Dir(repo.Dir), "nest")
	rounds := fixtures.Rounds(20, 200)
	outer, inner := 0, 0
	for i := range rounds {
		path := filepath.Join(root, fmt.Sprintf("p%d", i))
		a := crashStart(t, bin, repo.Dir, nil, "workspace", "allocate", fmt.Sprintf("P-%d", i), "--path", path, "--json")
		b := crashStart(t, bin, repo.Dir, nil, "workspace", "allocate", fmt.Sprintf("Q-%d", i), "--path", filepath.Join(path, "sub"), "--json")
		ra, rb := a.wait(), b.wait()
		if ra.exit == 0 && rb.exit == 0 {
			t.Fatalf("round %d: both allocations succeeded, one inside the other\n%s\n%s", i, ra, rb)
		}
		for _, r := range []crashRun{ra, rb} {
			// The inner one's git creates p on the way: path_exists.
			if code := r.errorCode(); r.exit != 0 && code != "nested_workspace" && code != "path_exists" {
				t.Fatalf("round %d: an allocation failed otherwise than nested_workspace or path_exists\n%s", i, r)
			}
		}
		if ra.exit == 0 {
			outer++
		}
		if rb.exit == 0 {
			inner++
		}
	}
	t.Logf("%d rounds: the outer won %d, the inner %d", rounds, outer, inner)
	_ = p
}

// TestAllocationInsideWorkspaceCreatedMeanwhile pauses `allocate Q --path
// p/sub` after it checked git's worktrees and before it publishes, while
// P is allocated at p and created: Q is refused.
func TestAllocationInsideWorkspaceCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	repo, p := newProvider(t)
	path := filepath.Join(filepath.Dir(repo.Dir), "p")
	pause, reached, release := crashPause(t, "allocate/checked")
	q := crashStart(t, bin, repo.Dir, pause, "workspace", "allocate", "Q", "--path", filepath.Join(path, "sub"), "--json")
	reached()
	mustAllocate(t, p, AllocateOptions{Binding: "P", Path: path})
	release()
	if r := q.wait(); r.exit != 3 || r.errorCode() != "nested_workspace" {
		t.Fatalf("the allocation inside a workspace created meanwhile: want exit 3, nested_workspace\n%s", r)
	}
	if _, err := os.Lstat(filepath.Join(path, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("p/sub exists: %v", err)
	}
}

// TestBeginOwnerPid: begin --owner-pid marks the workspace in use while
// the agent runs; once it is dead, its leases are released without their
// token (recoverable) and the workspace is reclaimed.
func TestBeginOwnerPid(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	agent := exec.Command("sleep", "600")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	res, err := p.Begin(t.Context(), BeginOptions{Task: "T-7", Paths: []string{"src/**"}, OwnerPID: agent.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if res.Token == "" || res.Workspace.OwnerPID != agent.Process.Pid || res.Leases[0].OwnerPID != agent.Process.Pid {
		t.Fatalf("begin --owner-pid: token %q, workspace owner %d, lease owner %d", res.Token, res.Workspace.OwnerPID, res.Leases[0].OwnerPID)
	}
	if _, err := p.PreviewReclaim(t.Context(), "T-7"); !errors.Is(err, ErrWorkspaceLive) {
		t.Fatalf("preview while the agent runs: %v, want workspace_live", err)
	}
	svc, err := p.Admission(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, err := svc.Release(t.Context(), admission.ReleaseRequest{Holder: "T-7"}); !errors.Is(err, admission.ErrTokenRequired) {
		t.Fatalf("release without the token while the agent runs: %v, want token_required", err)
	}
	agent.Process.Kill()
	agent.Wait()
	if _, err := svc.Release(t.Context(), admission.ReleaseRequest{Holder: "T-7"}); err != nil {
		t.Fatalf("release of the dead agent's leases without the token: %v", err)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-7", Yes: true}); err != nil {
		t.Fatalf("reclaim once the agent is dead and its leases released: %v", err)
	}
}
