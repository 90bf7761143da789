package admission

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// freeWindow returns the first port of n consecutive ports, at or above
// 40000, that nothing listens on now (probed as admission probes). The
// tests give it to port_range, so that what they assert does not depend
// on what else runs on the machine.
func freeWindow(t *testing.T, n int) int {
	t.Helper()
	return freeWindowFrom(t, 40000+os.Getpid()%2000*8, n)
}

func freeWindowFrom(t *testing.T, from, n int) int {
	t.Helper()
	for lo := from; lo+n < 65000; lo += n {
		ok := true
		for p := lo; p < lo+n && ok; p++ {
			ok = probeLoopback(p) == nil
		}
		if ok {
			return lo
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

func setRange(t *testing.T, e *env, lo, hi int) {
	t.Helper()
	if _, err := e.s.SetPolicy(context.Background(), PolicyPortRange, fmt.Sprintf("%d-%d", lo, hi)); err != nil {
		t.Fatal(err)
	}
}

// Auto ports are distinct, within the range, granted as host:port:N and
// reported in Ports; when the range is exhausted the request is refused
// with ErrNoFreePort and nothing changes; a released port is picked again.
func TestAutoPortAllocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lo := freeWindow(t, 3)
	setRange(t, e, lo, lo+2)

	res := e.mustAcquire("web", "", "host:port:auto", "host:port:auto")
	if len(res.Ports) != 2 || res.Ports[0] == res.Ports[1] {
		t.Fatalf("ports = %v, want two distinct", res.Ports)
	}
	for i, p := range res.Ports {
		if p < lo || p > lo+2 {
			t.Errorf("port %d outside %d-%d", p, lo, lo+2)
		}
		if want := "host:port:" + strconv.Itoa(p); res.Leases[i].Resource != want || res.Leases[i].Key != "port:"+strconv.Itoa(p) {
			t.Errorf("lease %d = %s (key %s), want %s", i, res.Leases[i].Resource, res.Leases[i].Key, want)
		}
	}

	// One left: a request for two (with a file, admitted in two phases)
	// gets none; no row, no grant.
	before := hostRows(t, e)
	_, err := e.acquire("api", "", "file:a.txt", "host:port:auto", "host:port:auto")
	ae := wantErr(t, err, ErrNoFreePort)
	if ae.Resource != "host:port:auto" {
		t.Errorf("refusal names %q", ae.Resource)
	}
	if after := hostRows(t, e); !slices.Equal(before, after) {
		t.Errorf("a refused request changed the host ledger: %v -> %v", before, after)
	}
	if ls := e.list(false); len(ls) != 2 {
		t.Errorf("after the refusal %d live leases, want 2", len(ls))
	}

	// The last port, with a file lease in the same request.
	one := e.mustAcquire("api", "", "file:a.txt", "host:port:auto")
	third := one.Ports[0]
	if slices.Contains(res.Ports, third) || len(one.Leases) != 2 {
		t.Fatalf("third port %d (leases %v) repeats one of %v", third, one.Leases, res.Ports)
	}

	// A port that expired unreleased (quarantined) is still not handed out.
	e.clock.Advance(DefaultTTL + time.Minute)
	_, err = e.acquire("late", "", "host:port:auto")
	wantErr(t, err, ErrNoFreePort)

	// Released, a port is picked again.
	if _, err := e.s.Release(context.Background(), ReleaseRequest{Token: tokenOf("web"), Holder: "web", IDs: []string{res.Leases[0].ID}}); err != nil {
		t.Fatal(err)
	}
	again := e.mustAcquire("late", "", "host:port:auto")
	if again.Ports[0] != res.Ports[0] {
		t.Errorf("after the release got port %d, want the released %d", again.Ports[0], res.Ports[0])
	}
	if again.Leases[0].Generation != 2 {
		t.Errorf("generation %d, want 2", again.Leases[0].Generation)
	}
}

// A port an explicit host:port:N lease holds is skipped, and so is one
// that another program listens on, on 127.0.0.1 or on ::1.
func TestAutoPortSkipsHeldAndListening(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lo := freeWindow(t, 2)
	setRange(t, e, lo, lo+1)
	e.mustAcquire("explicit", "", "host:port:"+strconv.Itoa(lo))
	res := e.mustAcquire("auto", "", "host:port:auto")
	if res.Ports[0] != lo+1 {
		t.Fatalf("got %d, want %d (the other is leased)", res.Ports[0], lo+1)
	}

	for _, addr := range []string{"127.0.0.1", "::1"} {
		t.Run(addr, func(t *testing.T) {
			p := freeWindowFrom(t, lo+2, 1)
			setRange(t, e, p, p)
			l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
			if err != nil {
				t.Skipf("cannot listen on %s: %v", addr, err)
			}
			_, err = e.acquire("busy", "", "host:port:auto")
			ae := wantErr(t, err, ErrNoFreePort)
			if want := "1 in use by other programs"; !strings.Contains(ae.Reason, want) {
				t.Errorf("reason %q lacks %q", ae.Reason, want)
			}
			l.Close()
			got, err := e.acquire("busy", "", "host:port:auto")
			if err != nil {
				t.Fatal(err)
			}
			if got.Ports[0] != p {
				t.Errorf("after the listener closed got %v, want %d", got.Ports, p)
			}
			if _, err := e.s.Release(context.Background(), ReleaseRequest{Token: tokenOf("busy"), Holder: "busy"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Without IPv6 the ::1 bind fails with "cannot assign" or "not
// supported": 127.0.0.1 alone decides. A ::1 port in use is busy.
func TestIPv6Unavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "listen", Err: os.NewSyscallError("bind", syscall.EADDRNOTAVAIL)}, true},
		{&net.OpError{Op: "listen", Err: os.NewSyscallError("socket", syscall.EAFNOSUPPORT)}, true},
		{&net.OpError{Op: "listen", Err: os.NewSyscallError("bind", syscall.EADDRINUSE)}, false},
		{&net.OpError{Op: "listen", Err: os.NewSyscallError("bind", syscall.EACCES)}, false},
	} {
		if got := ipv6Unavailable(tc.err); got != tc.want {
			t.Errorf("ipv6Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// The policy key port_range takes LO-HI only.
func TestPortRangePolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	p, err := e.s.Policy(ctx)
	if err != nil || p.PortRange != DefaultPortRange {
		t.Fatalf("default port_range %q, %v", p.PortRange, err)
	}
	for _, bad := range []string{"", "20000", "1-2000", "30000-20000", "20000-70000", "a-b", "block"} {
		if _, err := e.s.SetPolicy(ctx, PolicyPortRange, bad); err == nil {
			t.Errorf("port_range %q accepted", bad)
		} else {
			wantErr(t, err, ErrInvalid)
		}
	}
	if p, err = e.s.SetPolicy(ctx, PolicyPortRange, "41000-41009"); err != nil || p.PortRange != "41000-41009" {
		t.Fatalf("set: %v, %v", p, err)
	}
	if p, err = e.open().Policy(ctx); err != nil || p.PortRange != "41000-41009" || p.SameCheckoutConflict != Block {
		t.Fatalf("reopened: %+v, %v", p, err)
	}
}

// Sixteen processes ask for host:port:auto at once, from a range barely
// larger than what they ask, in rounds that keep the earlier grants: every
// process is granted, and every live lease names a distinct port.
func TestAutoPortRace(t *testing.T) {
	t.Parallel()
	const procs = 16
	rounds := fixtures.Rounds(4, 20)
	e := newEnv(t)
	lo := freeWindow(t, procs*rounds+4)
	setRange(t, e, lo, lo+procs*rounds+3)
	racers := startRacers(t, procs, "acquire", e)
	for round := range rounds {
		results := race(t, racers, func(i int) racerJob {
			return racerJob{Holder: fmt.Sprintf("racer-%d-%d", round, i), Checkout: e.main.Dir, Resources: []string{"host:port:auto"}}
		})
		for _, r := range results {
			if !r.OK {
				t.Errorf("round %d: a racer failed: %+v", round, r)
			}
		}
		live := e.list(false)
		seen := map[string]bool{}
		for _, l := range live {
			if seen[l.Key] {
				t.Fatalf("round %d: port %s granted twice: %v", round, l.Key, live)
			}
			seen[l.Key] = true
		}
		if len(live) != procs*(round+1) {
			t.Fatalf("round %d: %d live leases, want %d", round, len(live), procs*(round+1))
		}
	}
}

// A retry with the same request id returns the ports granted the first
// time, and grants nothing new.
func TestAutoPortReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lo := freeWindow(t, 4)
	setRange(t, e, lo, lo+3)
	req := AcquireRequest{Token: tokenOf("web"), Holder: "web", Checkout: e.main.Dir, RequestID: "r-1",
		Resources: []string{"host:port:auto", "host:port:auto"}}
	first, err := e.s.Acquire(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.s.Acquire(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || !slices.Equal(again.Ports, first.Ports) {
		t.Errorf("retry: replayed %v, ports %v, want the recorded %v", again.Replayed, again.Ports, first.Ports)
	}
	if n := len(e.list(false)); n != 2 {
		t.Errorf("%d live leases after the retry, want 2", n)
	}
}
