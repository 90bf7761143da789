package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
)

// Sixteen `majlis lease acquire` processes, from two repositories, race for
// one host singleton: exactly one is granted (exit 0), fifteen are refused
// with exit 4 and code held, and the ledger holds one live lease, theirs.
func TestHostSingletonRaceCLI(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t) // any build of the binary does; this one is built already
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
	repos := []*fixtures.Repo{fixtures.NewRepo(t), fixtures.NewRepo(t)}
	for _, r := range repos {
		if run := majlisRun(t, bin, r.Dir, env, "init"); run.exit != 0 {
			t.Fatal(run)
		}
	}
	const n = 16
	runs := make([]binRun, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			runs[i] = majlisRun(t, bin, repos[i%2].Dir, env, "lease", "acquire", "--holder", fmt.Sprintf("agent-%02d", i), "--json", "host:port:3000")
		}()
	}
	close(start)
	wg.Wait()
	winner := ""
	for i, r := range runs {
		switch {
		case r.exit == 0:
			if winner != "" {
				t.Errorf("two winners: %s and agent-%02d", winner, i)
			}
			winner = fmt.Sprintf("agent-%02d", i)
		case r.exit != 4 || !jsonCode(r.stdout, "held"):
			t.Errorf("agent-%02d: want exit 4 held\n%s", i, r)
		}
	}
	if winner == "" {
		t.Fatal("nobody won the port")
	}
	live := majlisRun(t, bin, repos[0].Dir, env, "lease", "list", "--json").leases(t)
	if len(live) != 1 || live[0].Holder != winner || live[0].State != admission.StateActive || live[0].Generation != 1 {
		t.Errorf("after the race the ledger holds %+v, want one active lease of %s at generation 1", live, winner)
	}
}

// jsonCode reports whether stdout is one JSON error object with code.
func jsonCode(stdout, code string) bool {
	var out struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal([]byte(stdout), &out) == nil && out.Error.Code == code
}

// Sixteen `majlis lease acquire host:port:auto` processes, from two
// repositories sharing the host ledger, start at once, round after round,
// from a range only a little larger than all they ask for, and keep their
// ports: every one is granted, and no port is ever handed to two live
// leases. A port another program listens on is never handed out.
//
// Each round runs 16 processes on a machine shared with other tests; 6
// rounds (96 grants, the last ones from a range with 8 ports to spare)
// keep it to seconds. MAJLIS_PORT_RACE_ROUNDS=50 runs the longer version.
func TestAutoPortRaceCLI(t *testing.T) {
	t.Parallel()
	bin := failpointsBinary(t)
	env := []string{admission.HostLedgerEnv + "=" + filepath.Join(t.TempDir(), "host.db")}
	repos := []*fixtures.Repo{fixtures.NewRepo(t), fixtures.NewRepo(t)}
	const n = 16
	rounds := 6
	if s := os.Getenv("MAJLIS_PORT_RACE_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	lo := freePortWindow(t, n*rounds+9)
	busy, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(lo)))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, r := range repos {
		if run := majlisRun(t, bin, r.Dir, env, "init"); run.exit != 0 {
			t.Fatal(run)
		}
		if run := majlisRun(t, bin, r.Dir, env, "policy", "set", "port_range", fmt.Sprintf("%d-%d", lo, lo+n*rounds+8)); run.exit != 0 {
			t.Fatal(run)
		}
	}
	owner := map[int]string{}
	for round := range rounds {
		runs := make([]binRun, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				runs[i] = majlisRun(t, bin, repos[i%2].Dir, env, "lease", "acquire", "--holder", fmt.Sprintf("agent-%d-%02d", round, i),
					"--json", "host:port:auto")
			}()
		}
		close(start)
		wg.Wait()
		for i, r := range runs {
			var res admission.AcquireResult
			if r.exit != 0 || json.Unmarshal([]byte(r.stdout), &res) != nil || len(res.Ports) != 1 {
				t.Fatalf("round %d, agent %d: want one port\n%s", round, i, r)
			}
			p := res.Ports[0]
			switch {
			case p == lo:
				t.Errorf("round %d: port %d, which another program listens on, was handed out", round, p)
			case owner[p] != "":
				t.Errorf("round %d: port %d handed to %s and to agent-%d-%02d", round, p, owner[p], round, i)
			}
			owner[p] = fmt.Sprintf("agent-%d-%02d", round, i)
		}
	}
	live := majlisRun(t, bin, repos[0].Dir, env, "lease", "list", "--json").leases(t)
	if len(live) != n*rounds {
		t.Errorf("the ledger holds %d live leases, want %d", len(live), n*rounds)
	}
	for _, l := range live {
		if p := admission.PortOf(l.Key); owner[p] != l.Holder {
			t.Errorf("lease %s of %s names port %d, granted to %q", l.ID, l.Holder, p, owner[p])
		}
	}
}

// freePortWindow returns the first of n consecutive ports, from 40000 up,
// that nothing listens on, on 127.0.0.1 or ::1.
func freePortWindow(t *testing.T, n int) int {
	t.Helper()
	lo, ok := findFreePorts(n)
	if !ok {
		t.Fatalf("no %d consecutive free ports", n)
	}
	return lo
}

// findFreePorts finds n consecutive ports, from 40000 up, that nothing
// listens on (on 127.0.0.1, nor on ::1 where the host has IPv6).
func findFreePorts(n int) (int, bool) {
	free := func(p int) bool {
		for _, a := range []string{"127.0.0.1", "::1"} {
			l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(p)))
			if err != nil {
				return a == "::1" && !strings.Contains(err.Error(), "address already in use")
			}
			l.Close()
		}
		return true
	}
	for lo := 40000 + os.Getpid()%1000*16; lo+n < 65000; lo += n {
		ok := true
		for p := lo; p < lo+n && ok; p++ {
			ok = free(p)
		}
		if ok {
			return lo, true
		}
	}
	return 0, false
}
