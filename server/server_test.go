package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// A fake server on the recorded address, run by the leaseholder itself
// (this test process holds the lease, so its pid and start time are right):
// only the token's digest and the nonce's HMAC can tell it from the real
// thing, and the probe must.
func TestProbeComparesTheToken(t *testing.T) {
	_, tg := testRepo(t)
	var mu sync.Mutex
	var mode string
	var recorded []byte
	var sawToken bool
	var rec reservation.Record
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") != "" {
			sawToken = true
		}
		if r.URL.Path != "/api/v1/live" {
			http.NotFound(w, r)
			return
		}
		if mode == "honest-once" {
			mode = "other-token" // the port changes hands after the first answer
		} else if mode == "honest-then-other" {
			mode = "honest-once"
		}
		nonce := r.URL.Query().Get("nonce")
		l := wire.Live{Repository: tg.Repository, PID: rec.Owner.PID, StartTime: rec.Owner.StartTime, Holder: true,
			TokenSHA256: wire.TokenDigest(rec.Token), Nonce: nonce, HMAC: wire.TokenHMAC(rec.Token, nonce), Ready: true, API: serverctl.APIVersion}
		switch mode {
		case "other-token":
			other := newNonce()
			l.TokenSHA256, l.HMAC = wire.TokenDigest(other), wire.TokenHMAC(other, nonce)
		case "replay":
			w.Write(recorded)
			return
		case "not-holder":
			l.Holder = false
		case "other-pid":
			l.PID++
		case "unrelated":
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(&l)
		if mode == "honest" {
			recorded = b
		}
		w.Write(b)
	}))
	defer fake.Close()

	leases, err := serverctl.OpenLeases(tg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	defer leases.Close()
	lease, err := leases.Acquire(context.Background(), reservation.Request{Resource: serverctl.Resource, Purpose: serverctl.Purpose, TTL: time.Hour,
		Metadata: map[string]string{"repository": tg.Repository, "address": fake.Listener.Addr().String(), "api": serverctl.APIVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	rec = lease.Record()

	for _, tc := range []struct {
		mode string
		want serverctl.State
		why  string
	}{
		{"honest", serverctl.Running, ""}, // the fake can pass: the comparisons below are what fail it
		{"other-token", serverctl.Foreign, "digest of another token"},
		{"replay", serverctl.Foreign, "replayed"},
		{"not-holder", serverctl.Foreign, "does not hold"},
		{"other-pid", serverctl.Foreign, "from pid"},
		{"unrelated", serverctl.Foreign, "404"},
	} {
		mu.Lock()
		mode = tc.mode
		mu.Unlock()
		st, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if st.State != tc.want || !strings.Contains(st.Reason, tc.why) {
			t.Errorf("%s: probe found %s (%s), want %s (%q)", tc.mode, st.State, st.Reason, tc.want, tc.why)
		}
	}

	// serverctl.Stop sends the token only on a connection whose peer has just proven
	// it holds it: here the probe's answer is honest, the next is not.
	mu.Lock()
	mode, sawToken = "honest-then-other", false
	mu.Unlock()
	if _, err := serverctl.Stop(context.Background(), tg, serverctl.StopOptions{}); !errors.Is(err, serverctl.ErrForeign) {
		t.Errorf("stop when the port changed hands: %v, want serverctl.ErrForeign", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sawToken {
		t.Error("the token was sent to a peer that had not proven it holds it")
	}
}

// A real server: its routes refuse requests without the token or with
// another Host, and its liveness answer never carries the token.
func TestRequestsAreGuarded(t *testing.T) {
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg)
	token := leaseToken(t, tg)
	_, port, _ := net.SplitHostPort(st.Address)
	for _, tc := range []struct {
		name, token, host string
		want              int
	}{
		{"no token", "", "", http.StatusUnauthorized},
		{"another token", newNonce(), "", http.StatusUnauthorized},
		{"rebinding host", token, "evil.example:" + port, http.StatusForbidden},
		{"another port", token, "127.0.0.1:1", http.StatusForbidden},
		{"token and host", token, "", http.StatusOK},
		{"localhost", token, "localhost:" + port, http.StatusOK},
	} {
		resp := get(t, st.Address, "/api/v1/", tc.token, tc.host)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d: %s", tc.name, resp.Status, tc.want, body)
		}
		if tc.want == http.StatusOK && !strings.Contains(string(body), `"workspaces"`) {
			t.Errorf("%s: index without workspaces: %s", tc.name, body)
		}
	}
	resp := get(t, st.Address, "/api/v1/live?nonce=abc", "", "")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), token) || !strings.Contains(string(body), wire.TokenDigest(token)) {
		t.Errorf("live: %s %s", resp.Status, body)
	}
	// A shutdown request without the token is refused, and the server runs on.
	req, _ := http.NewRequest(http.MethodPost, "http://"+st.Address+"/api/v1/shutdown", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("shutdown without token: %s", resp.Status)
	}
	if s, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || s.State != serverctl.Running {
		t.Errorf("after refused shutdown: %v %+v", err, s)
	}
	// A caller of another version finds it, and neither uses nor replaces it.
	if s, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{Version: "another"}); err != nil || s.State != serverctl.VersionMismatch || s.PID != st.PID {
		t.Errorf("probe of another version: %v %+v", err, s)
	}
	o := startOpts(dir)
	o.Probe.Version = "another"
	if _, err := serverctl.Start(context.Background(), tg, o); !errors.Is(err, serverctl.ErrVersionMismatch) {
		t.Errorf("start of another version: %v", err)
	}
}

func TestStartTwiceGivesOneServer(t *testing.T) {
	dir, tg := testRepo(t)
	var wg sync.WaitGroup
	res := make([]*serverctl.StartResult, 2)
	errs := make([]error, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = serverctl.Start(context.Background(), tg, startOpts(dir))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	t.Cleanup(func() { killOwner(t, mustOwner(t, res[0].Server)) })
	if res[0].Started == res[1].Started {
		t.Errorf("started: %v and %v, want exactly one", res[0].Started, res[1].Started)
	}
	if res[0].Server.PID != res[1].Server.PID || res[0].Server.Address != res[1].Server.Address {
		t.Errorf("two servers: %+v and %+v", res[0].Server, res[1].Server)
	}
}

// A server killed without releasing its lease leaves a stale lease; an
// unrelated listener that took its port is foreign, not the server; start
// recovers the lease and starts a new server.
func TestStaleLeaseIsRecovered(t *testing.T) {
	dir, tg := testRepo(t)
	old := startServer(t, dir, tg)
	o := mustOwner(t, old)
	if err := syscall.Kill(o.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, o)
	st, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
	if err != nil || st.State != serverctl.StaleLease {
		t.Fatalf("after SIGKILL: %v %+v", err, st)
	}

	ln, err := net.Listen("tcp", old.Address)
	if err != nil {
		t.Fatalf("taking the dead server's port: %v", err)
	}
	unrelated := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"hello": "I am not majlis"}`)
	})}
	go unrelated.Serve(ln)
	defer unrelated.Close()
	st, err = serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
	if err != nil || st.State != serverctl.Foreign || st.Owner != string(procid.Dead) {
		t.Fatalf("unrelated listener on the port: %v %+v", err, st)
	}

	res, err := serverctl.Start(context.Background(), tg, startOpts(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killOwner(t, mustOwner(t, res.Server)) })
	if res.Recovered == nil || res.Recovered.Owner.PID != old.PID || !res.Started || res.Server.PID == old.PID || res.Server.Address == old.Address {
		t.Fatalf("start after a dead server: %+v (server %+v)", res, res.Server)
	}
}

// A server whose lease was replaced exits at once, leaving the new lease.
func TestReplacedLeaseExits(t *testing.T) {
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg, fenceEnv+"=10ms")
	o := mustOwner(t, st)
	other := newNonce()
	writeLease(t, tg, reservation.Record{Token: other, Owner: o,
		Metadata: map[string]string{"repository": tg.Repository, "address": st.Address}})
	waitDead(t, o)
	if got := leaseToken(t, tg); got != other {
		t.Fatalf("the fenced server touched the lease: token %s, want %s", got, other)
	}
}

// A server busy with MaxHandlers calls that never finish still answers
// liveness: it is running and attached to, never replaced.
func TestBusyServerIsAttached(t *testing.T) {
	const max = 4
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg, maxEnv+"=4")
	token := leaseToken(t, tg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range max + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+st.Address+"/api/v1/debug/block", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wctx, wcancel := context.WithTimeout(context.Background(), childWait)
	defer wcancel()
	var last *serverctl.Status
	if err := waitFor(wctx, func() bool {
		last, _ = serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
		return last != nil && last.Busy == max
	}); err != nil {
		t.Fatalf("the pool never filled: %+v", last)
	}
	if last.State != serverctl.Running {
		t.Fatalf("busy server: %s (%s)", last.State, last.Reason)
	}
	res, err := serverctl.Attach(context.Background(), tg, startOpts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.Started || res.Server.PID != st.PID || res.Server.Busy != max {
		t.Fatalf("attach to a busy server: started=%v %+v", res.Started, res.Server)
	}
}

// A live leaseholder that does not answer (stopped) is unresponsive: start
// and stop refuse, and it is not signalled.
func TestUnresponsiveIsNeverTakenOver(t *testing.T) {
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg)
	if err := syscall.Kill(st.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(st.PID, syscall.SIGCONT)
	// The signal is delivered asynchronously: wait until the kernel says
	// the process is stopped (state T).
	wctx, wcancel := context.WithTimeout(context.Background(), childWait)
	defer wcancel()
	if err := waitFor(wctx, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/stat")
		i := bytes.LastIndexByte(b, ')')
		return err == nil && i > 0 && i+2 < len(b) && b[i+2] == 'T'
	}); err != nil {
		t.Fatal("the server never stopped")
	}
	po := serverctl.ProbeOptions{Timeout: 100 * time.Millisecond}
	got, err := serverctl.Probe(context.Background(), tg, po)
	if err != nil || got.State != serverctl.Unresponsive {
		t.Fatalf("stopped server: %v %+v", err, got)
	}
	o := startOpts(dir)
	o.Probe = po
	if _, err := serverctl.Start(context.Background(), tg, o); !errors.Is(err, serverctl.ErrUnresponsive) {
		t.Errorf("start: %v, want serverctl.ErrUnresponsive", err)
	}
	if _, err := serverctl.Stop(context.Background(), tg, serverctl.StopOptions{Probe: po}); !errors.Is(err, serverctl.ErrUnresponsive) {
		t.Errorf("stop: %v, want serverctl.ErrUnresponsive", err)
	}
	syscall.Kill(st.PID, syscall.SIGCONT)
	if got, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || got.State != serverctl.Running || got.PID != st.PID {
		t.Errorf("after SIGCONT: %v %+v", err, got)
	}
	res, err := serverctl.Stop(context.Background(), tg, serverctl.StopOptions{})
	if err != nil || !res.Stopped || len(res.Signals) != 0 {
		t.Fatalf("stop: %v %+v", err, res)
	}
	if got, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || got.State != serverctl.NotRunning {
		t.Errorf("after stop: %v %+v", err, got)
	}
}

// stop --force signals only the process the lease names: a live process
// with the lease's pid but another start time is never signalled.
func TestStopNeverSignalsAnotherStartTime(t *testing.T) {
	_, tg := testRepo(t)
	cmd, out := startSleeper(t)
	real, err := procid.Of(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	impostor := real
	impostor.StartTime++
	writeLease(t, tg, reservation.Record{Owner: impostor,
		Metadata: map[string]string{"repository": tg.Repository, "address": "127.0.0.1:1"}})
	res, err := serverctl.Stop(context.Background(), tg, serverctl.StopOptions{Force: true, Grace: time.Millisecond})
	if err != nil || res.Stopped || len(res.Signals) != 0 {
		t.Fatalf("stop --force on another start time: %v %+v", err, res)
	}
	if sigs, err := serverctl.Terminate(context.Background(), impostor, time.Millisecond); err != nil || len(sigs) != 0 {
		t.Fatalf("terminate of another start time: %v %v", sigs, err)
	}
	// Had either signalled, the sleeper would be dead (terminate ends
	// with SIGKILL and waits); it is alive, never having seen TERM.
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG, nil); pid != 0 || err != nil {
		t.Fatalf("the sleeper was signalled: wait4 %d %v %v", pid, err, ws)
	}
	// The right owner is signalled: TERM (caught), then KILL.
	sigs, err := serverctl.Terminate(context.Background(), real, time.Millisecond)
	if err != nil || strings.Join(sigs, ",") != "TERM,KILL" {
		t.Fatalf("terminate of the owner: %v %v", sigs, err)
	}
	if !out.Scan() || out.Text() != "term" {
		t.Errorf("the sleeper did not see TERM: %q", out.Text())
	}
}
