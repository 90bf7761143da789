package admission

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// hostRows reads every row of the host ledger: key, holder, state.
func hostRows(t *testing.T, e *env) []string {
	t.Helper()
	hl, err := e.s.hostLedger(context.Background(), false)
	if err != nil || hl == nil {
		t.Fatalf("host ledger: %v, %v", hl, err)
	}
	rows, err := queryRows(context.Background(), hl.db, `SELECT `+rowColumns+` FROM leases ORDER BY acquired_at, id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		st := r.stateAt(e.clock.Now().UnixNano())
		out = append(out, r.key+" "+r.holder+" "+string(st))
	}
	return out
}

func eventKinds(t *testing.T, l *ledger) []string {
	t.Helper()
	rows, err := l.db.Query(`SELECT kind FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		rows.Scan(&k)
		out = append(out, k)
	}
	return out
}

// TestMixedDeniedInRepositoryPhase: the host rows of a request refused by
// the repository ledger are gone afterwards.
func TestMixedDeniedInRepositoryPhase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustAcquire("a", "", "file:src/a.go")
	_, err := e.acquire("b", "", "host:port:9", "file:src/a.go")
	wantErr(t, err, ErrHeld)
	if rows := hostRows(t, e); len(rows) != 0 {
		t.Fatalf("host rows after a denied mixed request: %v", rows)
	}
	hl, _ := e.s.hostLedger(context.Background(), false)
	if got := strings.Join(eventKinds(t, hl), " "); got != "pending abandon" {
		t.Errorf("host events = %q", got)
	}
	e.mustAcquire("c", "", "host:port:9")
}

// TestMixedGrant: a mixed set is granted in both ledgers, host rows
// confirmed.
func TestMixedGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.mustAcquire("a", "", "file:src/a.go", "host:port:9", "intent:docs/**")
	if len(res.Leases) != 3 || res.Leases[1].Scope != ScopeHost || res.Leases[1].State != StateActive {
		t.Fatalf("leases = %+v", res.Leases)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 a active" {
		t.Fatalf("host rows = %v", rows)
	}
	_, err := e.acquire("b", e.linked.Dir, "host:port:9")
	wantErr(t, err, ErrHeld)
}

// TestPendingBlocksWhileAdmitterLives: a pending host row of a live
// admitter is held; once its admission finishes it is a grant.
func TestPendingBlocksWhileAdmitterLives(t *testing.T) {
	e := newEnv(t)
	reached, resume := make(chan struct{}), make(chan struct{})
	stepHook = func(name string) {
		if name == "admission/host-pending" {
			close(reached)
			<-resume
		}
	}
	defer func() { stepHook = nil }()
	var wg sync.WaitGroup
	var res *AcquireResult
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err = e.acquire("a", "", "host:port:9", "file:src/a.go")
	}()
	<-reached
	_, err2 := e.acquire("b", "", "host:port:9")
	ae := wantErr(t, err2, ErrHeld)
	if c := ae.Conflicts[0]; c.Lease.State != StatePending || c.Policy != PolicyHostSingleton {
		t.Errorf("conflict = %+v", c)
	}
	for _, l := range e.list(false) {
		if l.Scope == ScopeHost && l.State != StatePending {
			t.Errorf("a pending row is listed as %s", l.State)
		}
	}
	close(resume)
	wg.Wait()
	if err != nil || len(res.Leases) != 2 {
		t.Fatalf("admission: %+v, %v", res, err)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 a active" {
		t.Fatalf("host rows = %v", rows)
	}
}

// crashAcquire runs a mixed acquire in a child process that kills itself
// at the failpoint at, and checks that it died.
func crashAcquire(t *testing.T, e *env, at, holder, request string, resources ...string) {
	t.Helper()
	c := startChild(t, "acquire", "MAJLIS_STATE="+e.state, "MAJLIS_HOST="+e.host, "MAJLIS_CHECKOUT="+e.main.Dir,
		"MAJLIS_HOLDER="+holder, "MAJLIS_RESOURCES="+strings.Join(resources, ","), "MAJLIS_CRASH_AT="+at,
		"MAJLIS_REQUEST="+request, "MAJLIS_NOW="+e.clock.Now().Format(time.RFC3339Nano))
	r, st := result(c)
	if st.Exited() {
		t.Fatalf("the child did not crash at %s: %+v (exit %d)", at, r, st.ExitCode())
	}
}

// TestCrashAfterHostPending: an admitter killed between its pending host
// rows and its repository transaction leaves pending rows that grant
// nothing; the next admission meeting them deletes them.
func TestCrashAfterHostPending(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	crashAcquire(t, e, "admission/host-pending", "dead", "", "host:port:9", "file:src/a.go")
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 dead pending" {
		t.Fatalf("host rows = %v", rows)
	}
	for _, l := range e.list(true) {
		if l.Scope != ScopeHost {
			t.Fatalf("the repository ledger holds %+v", l)
		}
	}
	if live, _ := e.s.LiveLeases(context.Background(), "dead", ""); len(live) != 0 {
		t.Fatal("a pending row made its holder live")
	}
	res := e.mustAcquire("b", "", "host:port:9")
	if res.Leases[0].Generation != 2 {
		t.Errorf("generation %d, want 2 (the pending row took 1)", res.Leases[0].Generation)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 b active" {
		t.Fatalf("host rows = %v", rows)
	}
	e.mustAcquire("b", "", "file:src/a.go")
}

// TestCrashAfterRepositoryCommit: an admitter killed after its repository
// transaction committed leaves pending host rows; the next admission
// meeting them grants them, and the request is held.
func TestCrashAfterRepositoryCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	crashAcquire(t, e, "admission/repo-committed", "dead", "", "host:port:9", "file:src/a.go")
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 dead pending" {
		t.Fatalf("host rows = %v", rows)
	}
	_, err := e.acquire("b", "", "host:port:9")
	ae := wantErr(t, err, ErrHeld)
	if c := ae.Conflicts[0]; c.Lease.Holder != "dead" || c.Lease.State != StateActive {
		t.Fatalf("conflict = %+v", c)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 dead active" {
		t.Fatalf("host rows = %v", rows)
	}
}

// TestCrashResumedByRequestID: a retry with the request id of a crashed
// two-phase admission returns its result and confirms its host rows.
func TestCrashResumedByRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	crashAcquire(t, e, "admission/repo-committed", "a", "req-9", "host:port:9", "file:src/a.go")
	res, err := e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf("a"), Holder: "a", Checkout: e.main.Dir,
		Resources: []string{"host:port:9", "file:src/a.go"}, RequestID: "req-9"})
	if err != nil || !res.Replayed || len(res.Leases) != 2 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if rows := hostRows(t, e); len(rows) != 1 || rows[0] != "port:9 a active" {
		t.Fatalf("host rows = %v", rows)
	}

	// After a crash before the repository transaction, the retry admits
	// anew.
	crashAcquire(t, e, "admission/host-pending", "b", "req-10", "host:port:10", "file:src/b.go")
	res, err = e.s.Acquire(context.Background(), AcquireRequest{Token: tokenOf("b"), Holder: "b", Checkout: e.main.Dir,
		Resources: []string{"host:port:10", "file:src/b.go"}, RequestID: "req-10"})
	if err != nil || res.Replayed {
		t.Fatalf("retry: %+v, %v", res, err)
	}
}

// TestCrashInTransaction: a child killed with SIGKILL inside the admission
// transaction leaves no grant, in either ledger.
func TestCrashInTransaction(t *testing.T) {
	t.Parallel()
	for _, resources := range [][]string{{"file:src/a.go", "intent:docs/**"}, {"host:port:9"}, {"host:port:9", "file:src/a.go"}} {
		t.Run(strings.Join(resources, ","), func(t *testing.T) {
			e := newEnv(t)
			crashAcquire(t, e, "admission/in-transaction", "dead", "", resources...)
			for _, l := range e.list(true) {
				if l.State != StatePending {
					t.Fatalf("a crashed admission left %+v", l)
				}
			}
			res := e.mustAcquire("b", "", resources...)
			if len(res.Leases) != len(resources) {
				t.Fatalf("leases = %+v", res.Leases)
			}
		})
	}
}

// TestHostSingletonRace: 16 processes race for one host name; exactly one
// wins and the 15 others are refused as held.
func TestHostSingletonRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	racers := startRacers(t, 16, "acquire", e)
	won, held := 0, 0
	for _, r := range race(t, racers, func(i int) racerJob {
		return racerJob{Holder: "racer-" + string(rune('a'+i)), Checkout: e.main.Dir, Resources: []string{"host:port:3000"}}
	}) {
		switch {
		case r.OK:
			won++
		case r.Code == "held":
			held++
		default:
			t.Errorf("a racer failed: %+v", r)
		}
	}
	if won != 1 || held != 15 {
		t.Fatalf("%d won, %d held; want 1 and 15", won, held)
	}
	if rows := hostRows(t, e); len(rows) != 1 {
		t.Fatalf("host rows = %v", rows)
	}
}
