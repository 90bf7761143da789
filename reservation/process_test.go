package reservation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/procid"
)

func childEnvFor(d *Dir, res string, extra ...string) []string {
	return append([]string{"LEASE_DIR=" + d.path, "LEASE_RES=" + res}, extra...)
}

// Eight processes race for one lease, round after round: exactly one wins
// each round, the file holds the winner's record, every loser sees ErrHeld
// with the winner's facts, no temporary file remains, and generations only
// grow.
func TestRaceManyProcesses(t *testing.T) {
	t.Parallel()
	const procs = 8
	rounds := 60
	if testing.Short() {
		rounds = 10
	}
	d := openTestDir(t)
	var kids []*fixtures.Helper
	for range procs {
		kids = append(kids, startChild(t, "race", childEnvFor(d, "res")))
	}
	var lastGen uint64
	for round := range rounds {
		for _, k := range kids {
			k.Send("go")
		}
		var winner *fixtures.Helper
		var won *Record
		replies := make([]childReply, procs)
		for i, k := range kids {
			k.Recv(&replies[i])
			if replies[i].OK {
				if winner != nil {
					t.Fatalf("round %d: two winners", round)
				}
				winner, won = k, replies[i].Record
			}
		}
		if winner == nil {
			t.Fatalf("round %d: no winner: %+v", round, replies)
		}
		for i, r := range replies {
			if r.OK {
				continue
			}
			if r.Sentinel != "held" || r.Holder == nil || r.Holder.Token != won.Token || r.Holder.Owner.PID != winner.Pid() {
				t.Fatalf("round %d: loser %d got %s (%s), want held by the winner", round, i, r.Sentinel, r.Err)
			}
		}
		disk, err := d.Inspect("res")
		if err != nil || disk.Token != won.Token {
			t.Fatalf("round %d: lease file holds %+v (%v), want the winner's", round, disk, err)
		}
		if won.Generation <= lastGen {
			t.Fatalf("round %d: generation %d after %d", round, won.Generation, lastGen)
		}
		lastGen = won.Generation
		assertNoTemps(t, d)
		winner.Send("release")
		var rel childReply
		winner.Recv(&rel)
		if !rel.OK {
			t.Fatalf("round %d: winner's release: %s", round, rel.Err)
		}
	}
}

func TestForkedChildCannotRelease(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	l := mustAcquire(t, d, req("res"))
	k := startChild(t, "forked-release", childEnvFor(d, "res"), l.f)
	var r childReply
	k.Recv(&r)
	if r.OK || r.Sentinel != "not_owner,not_owner" {
		t.Fatalf("child with the owner's descriptor and record: release,renew = %s (%s); want not_owner twice", r.Sentinel, r.Err)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("owner disturbed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// holdAndKill makes a lease whose owner was SIGKILLed while holding it.
func holdAndKill(t *testing.T, d *Dir, res string, ttl time.Duration) *Record {
	t.Helper()
	k := startChild(t, "hold", childEnvFor(d, res, "LEASE_TTL="+ttl.String()))
	var r childReply
	k.Recv(&r)
	if !r.OK {
		t.Fatalf("holder: %s", r.Err)
	}
	k.Kill()
	return r.Record
}

// skewed opens another handle on d whose clock runs ahead by skew.
func skewed(t *testing.T, d *Dir, skew time.Duration) *Dir {
	t.Helper()
	d2, err := Open(d.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Close() })
	d2.now = func() time.Time { return time.Now().Add(skew) }
	return d2
}

func TestCrashWhileHolding(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	dead := holdAndKill(t, d, "res", time.Minute)

	a, err := d.Assess("res")
	if err != nil {
		t.Fatal(err)
	}
	if a.Expired || a.Liveness != procid.Dead || a.Recoverable {
		t.Errorf("before expiry: %+v, want not expired, owner dead, not recoverable", a)
	}
	if _, err := d.Recover(t.Context(), "res"); !errors.Is(err, ErrNotExpired) {
		t.Fatalf("recover before expiry: %v, want ErrNotExpired", err)
	}
	if _, err := d.Acquire(t.Context(), req("res")); !errors.Is(err, ErrHeld) {
		t.Fatalf("acquire over a dead owner's lease: %v, want ErrHeld", err)
	}

	later := skewed(t, d, 2*time.Minute)
	got, err := later.Recover(t.Context(), "res")
	if err != nil {
		t.Fatalf("recover after expiry: %v", err)
	}
	if got.Token != dead.Token {
		t.Errorf("recovered %s, want %s", got.Token, dead.Token)
	}
	retired := filepath.Join(d.path, retiredDir, fmt.Sprintf("res.%d.%s.lease", dead.Generation, dead.Token))
	if _, err := os.Stat(retired); err != nil {
		t.Errorf("retired copy missing: %v", err)
	}
	if _, err := later.Recover(t.Context(), "res"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second recovery: %v, want ErrNotFound", err)
	}
	l := mustAcquire(t, d, req("res"))
	if l.Record().Generation != dead.Generation+1 {
		t.Errorf("generation after recovery %d, want %d", l.Record().Generation, dead.Generation+1)
	}
}

// A process killed at any step of acquire, renew, release or recover
// leaves a state that is valid and that later operations finish: no lease
// or a complete one, at most one stray temporary file that a sweep
// removes, recovery once expired, and generations that still grow.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	steps := []struct{ op, step string }{
		{"acquire", "acquire/locked"},
		{"acquire", "acquire/temp-created"},
		{"acquire", "acquire/written"},
		{"acquire", "acquire/linked"},
		{"acquire", "acquire/unlinked-temp"},
		{"renew", "renew/temp-created"},
		{"renew", "renew/renamed"},
		{"release", "release/renamed"},
		{"recover", "recover/inspected"},
		{"recover", "recover/locked"},
		{"recover", "recover/linked"},
		{"recover", "recover/renamed"},
	}
	for _, s := range steps {
		t.Run(s.step, func(t *testing.T) {
			d := openTestDir(t)
			var maxGen uint64
			// Some history first, so generations have something to grow from.
			l := mustAcquire(t, d, req("res"))
			maxGen = l.Record().Generation
			l.Release()
			env := childEnvFor(d, "res", "LEASE_OP="+s.op, "LEASE_STEP="+s.step)
			if s.op == "recover" {
				maxGen = holdAndKill(t, d, "res", time.Minute).Generation
				env = append(env, "LEASE_SKEW=2m")
			}
			k := startChild(t, "crash", env)
			var r childReply
			k.Recv(&r)
			if r.Stepped != s.step {
				t.Fatalf("child did not reach %s: %+v", s.step, r)
			}
			err := k.Cmd.Wait()
			if ws, ok := k.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die by SIGKILL: %v", err)
			}

			// The state is valid: no lease, or one that reads cleanly.
			rec, err := d.Inspect("res")
			switch {
			case errors.Is(err, ErrNotFound):
			case err != nil:
				t.Fatalf("after crash at %s the lease is unreadable: %v", s.step, err)
			default:
				maxGen = max(maxGen, rec.Generation)
			}
			temps, _ := filepath.Glob(filepath.Join(d.path, ".*"+tmpSuffix))
			if len(temps) > 1 {
				t.Fatalf("more than one stray temporary file: %v", temps)
			}
			later := skewed(t, d, time.Hour)
			if _, err := later.Sweep(); err != nil {
				t.Fatal(err)
			}
			assertNoTemps(t, d)

			// Later operations finish the job.
			if rec != nil {
				if _, err := d.Recover(t.Context(), "res"); !errors.Is(err, ErrNotExpired) {
					t.Fatalf("recovery before expiry: %v, want ErrNotExpired", err)
				}
				if _, err := later.Recover(t.Context(), "res"); err != nil {
					t.Fatalf("recovery after expiry: %v", err)
				}
			}
			l2 := mustAcquire(t, d, req("res"))
			if g := l2.Record().Generation; g <= maxGen {
				t.Fatalf("generation %d after a crash at %s, not above %d", g, s.step, maxGen)
			}
			if err := l2.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The staleness table: only an expired lease whose owner is proven dead is
// recovered; RecoverDead also retires an unexpired one, of a dead owner
// only.
func TestStalenessTable(t *testing.T) {
	t.Parallel()
	boots := []string{"same boot", "other boot", "other machine", "unreadable owner"}
	owners := []string{"alive", "killed", "pid reused", "other pid namespace", "witness held by grandchild"}
	expect := func(boot, owner string) procid.Liveness {
		switch {
		case owner == "alive" || owner == "witness held by grandchild":
			return procid.Alive // the witness lock is held, whatever the record says
		case boot == "other machine" || boot == "unreadable owner":
			return procid.Unknown
		case boot == "other boot":
			return procid.Dead
		case owner == "other pid namespace":
			return procid.Unknown
		}
		return procid.Dead
	}
	for _, expired := range []bool{false, true} {
		for _, boot := range boots {
			for _, owner := range owners {
				name := fmt.Sprintf("expired=%v/%s/%s", expired, boot, owner)
				t.Run(name, func(t *testing.T) {
					d := openTestDir(t)
					mode := "hold"
					if owner == "witness held by grandchild" {
						mode = "hold-grandchild"
					}
					k := startChild(t, mode, childEnvFor(d, "res"))
					var r childReply
					k.Recv(&r)
					if !r.OK {
						t.Fatal(r.Err)
					}
					if r.Grandkid != 0 {
						t.Cleanup(func() { syscall.Kill(r.Grandkid, syscall.SIGKILL) })
					}
					if owner != "alive" {
						k.Kill()
					}
					// Rewrite the owner in place (same inode, so a held witness stays held).
					rec := *r.Record
					self, _ := d.owner()
					switch owner {
					case "pid reused":
						rec.Owner.PID, rec.Owner.StartTime = self.PID, self.StartTime+1
					case "other pid namespace":
						rec.Owner.PIDNamespace = "pid:[1]"
					}
					switch boot {
					case "other boot":
						rec.Owner.BootID = "00000000-0000-0000-0000-000000000000"
					case "other machine":
						rec.Owner.MachineID = "0123456789abcdef0123456789abcdef"
					}
					data := mustEncode(t, &rec)
					if err := os.WriteFile(d.leasePath("res"), data, 0o600); err != nil {
						t.Fatal(err)
					}

					skew := time.Duration(0)
					if expired {
						skew = 2 * time.Minute
					}
					probe := skewed(t, d, skew)
					if boot == "unreadable owner" {
						probe.self = func() (procid.Owner, error) { return procid.Owner{}, errors.New("/proc is not readable") }
					}
					wantLive := expect(boot, owner)
					a, err := probe.Assess("res")
					if err != nil {
						t.Fatal(err)
					}
					if a.Liveness != wantLive || a.Expired != expired {
						t.Errorf("assess: liveness %s (%s), expired %v; want %s, %v", a.Liveness, a.Reason, a.Expired, wantLive, expired)
					}
					_, err = probe.Recover(t.Context(), "res")
					var want error
					switch {
					case !expired:
						want = ErrNotExpired
					case wantLive == procid.Alive:
						want = ErrOwnerAlive
					case wantLive == procid.Unknown:
						want = ErrOwnerUnknown
					}
					if want == nil && err != nil || want != nil && !errors.Is(err, want) {
						t.Fatalf("recover: %v, want %v", err, want)
					}
					_, statErr := os.Stat(d.leasePath("res"))
					if recovered := errors.Is(statErr, os.ErrNotExist); recovered != (want == nil) {
						t.Fatalf("lease recovered = %v, want %v", recovered, want == nil)
					}
					if want != nil {
						if b, _ := os.ReadFile(d.leasePath("res")); string(b) != string(data) {
							t.Errorf("a refused recovery changed the lease")
						}
					}
					if expired {
						return
					}
					// RecoverDead waives the expiry, nothing else.
					_, err = probe.RecoverDead(t.Context(), "res")
					switch want = nil; wantLive {
					case procid.Alive:
						want = ErrOwnerAlive
					case procid.Unknown:
						want = ErrOwnerUnknown
					}
					if want == nil && err != nil || want != nil && !errors.Is(err, want) {
						t.Fatalf("recover dead: %v, want %v", err, want)
					}
					_, statErr = os.Stat(d.leasePath("res"))
					if recovered := errors.Is(statErr, os.ErrNotExist); recovered != (want == nil) {
						t.Fatalf("unexpired lease recovered = %v, want %v", recovered, want == nil)
					}
				})
			}
		}
	}
}

// Two recoverers of one dead lease: exactly one retires it.
func TestConcurrentRecoverers(t *testing.T) {
	t.Parallel()
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		d := openTestDir(t)
		dead := holdAndKill(t, d, "res", time.Minute)
		env := childEnvFor(d, "res", "LEASE_SKEW=2m")
		a, b := startChild(t, "recover", env), startChild(t, "recover", env)
		a.Send("go")
		b.Send("go")
		var ra, rb childReply
		a.Recv(&ra)
		b.Recv(&rb)
		if ra.OK == rb.OK {
			t.Fatalf("round %d: both or neither recovered: %+v / %+v", round, ra, rb)
		}
		loser := rb
		if rb.OK {
			loser = ra
		}
		if loser.Sentinel != "changed" && loser.Sentinel != "not_found" {
			t.Fatalf("round %d: the other recoverer got %s (%s)", round, loser.Sentinel, loser.Err)
		}
		retired, _ := filepath.Glob(filepath.Join(d.path, retiredDir, "*"))
		if len(retired) != 1 || filepath.Base(retired[0]) != fmt.Sprintf("res.%d.%s.lease", dead.Generation, dead.Token) {
			t.Fatalf("round %d: retired/ holds %v", round, retired)
		}
	}
}

// A recoverer that judged a dead lease, then lost the race to another
// recoverer while a fresh owner acquired the name, never retires the fresh
// lease.
func TestRecoverNeverRetiresAFreshLease(t *testing.T) {
	t.Parallel()
	d := openTestDir(t)
	holdAndKill(t, d, "res", time.Minute)

	slow := skewed(t, d, 2*time.Minute)
	paused, resume := make(chan struct{}), make(chan struct{})
	slow.hook = func(step string) {
		if step == "recover/inspected" {
			close(paused)
			<-resume
		}
	}
	done := make(chan error, 1)
	go func() { _, err := slow.Recover(t.Context(), "res"); done <- err }()
	<-paused

	fast := skewed(t, d, 2*time.Minute)
	if _, err := fast.Recover(t.Context(), "res"); err != nil {
		t.Fatalf("first recoverer: %v", err)
	}
	fresh := mustAcquire(t, d, req("res"))
	close(resume)
	if err := <-done; !errors.Is(err, ErrChanged) {
		t.Fatalf("slow recoverer: %v, want ErrChanged", err)
	}
	if err := fresh.Check(); err != nil {
		t.Fatalf("the fresh lease was disturbed: %v", err)
	}
	// Even once the fresh lease has expired, its live owner keeps it.
	if _, err := skewed(t, d, 2*time.Minute).Recover(t.Context(), "res"); !errors.Is(err, ErrOwnerAlive) {
		t.Fatalf("recovering a live owner's expired lease: %v, want ErrOwnerAlive", err)
	}
}
