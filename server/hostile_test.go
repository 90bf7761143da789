package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// DNS rebinding: a page whose host name now resolves to 127.0.0.1 sends
// its own name as Host. Every route refuses it, with or without the
// token, the open ones (liveness, readiness) included; the literal
// address and localhost are served, and the Bearer scheme is matched
// case-insensitively.
func TestEveryRouteChecksHost(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg)
	token := leaseToken(t, tg)
	_, port, _ := net.SplitHostPort(st.Address)
	routes := []struct{ method, path string }{
		{"GET", "/api/v1/live?nonce=abc"}, {"GET", "/api/v1/ready"}, {"POST", "/api/v1/shutdown"},
		{"GET", "/api/v1/"}, {"GET", "/api/v1/workspaces"}, {"POST", "/api/v1/leases/acquire"},
		{"POST", "/api/v1/heartbeat"}, {"GET", "/api/v1/debug/block"}, {"GET", "/api/v1/nothing"},
		{"POST", "/mcp"}, {"GET", "/"},
	}
	send := func(method, path, auth, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+st.Address+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example:" + port, "attacker.localhost:" + port, "127.0.0.1.nip.io:" + port, "evil.example"} {
		for _, auth := range []string{"", "Bearer " + token} {
			for _, r := range routes {
				code, body := send(r.method, r.path, auth, host)
				if code != http.StatusForbidden || !strings.Contains(body, `"bad_host"`) || strings.Contains(body, "hmac") {
					t.Errorf("%s %s Host %s (token %v): %d %s", r.method, r.path, host, auth != "", code, body)
				}
			}
		}
	}
	for _, auth := range []string{"bearer " + token, "BEARER  " + token} {
		if code, body := send("GET", "/api/v1/", auth, "localhost:"+port); code != http.StatusOK {
			t.Errorf("Authorization %q: %d %s", auth[:8], code, body)
		}
	}
	if code, body := send("GET", "/api/v1/live", "", ""); code != http.StatusOK || !strings.Contains(body, wire.TokenDigest(token)) {
		t.Errorf("liveness at the literal address: %d %s", code, body)
	}
	if s, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || s.State != serverctl.Running || s.PID != st.PID {
		t.Fatalf("after the rebound requests: %v %+v", err, s)
	}
}

// A server killed with SIGKILL protects nothing: eight attaches at once
// right after its death, long before its lease would expire, start
// exactly one new server and all attach to it; the retired lease is
// reported without its token.
func TestDeadServerReplacedAtOnce(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	old := startServer(t, dir, tg, ttlEnv+"=1h")
	oldToken := leaseToken(t, tg)
	o := mustOwner(t, old)
	if err := syscall.Kill(o.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, o)

	const n = 8
	res := make([]*serverctl.StartResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = serverctl.Attach(context.Background(), tg, startOpts(dir, ttlEnv+"=1h"))
		}()
	}
	wg.Wait()
	started := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("attach %d: %v", i, errs[i])
		}
		if res[i].Started {
			started++
			t.Cleanup(func() { killOwner(t, mustOwner(t, res[i].Server)) })
			if res[i].Recovered == nil || res[i].Recovered.Owner.PID != old.PID {
				t.Errorf("the starter did not report the retired lease: %+v", res[i].Recovered)
			}
		}
	}
	if started != 1 {
		t.Fatalf("%d attaches started a server, want exactly 1", started)
	}
	for i := range n {
		if res[i].Server.State != serverctl.Running || res[i].Server.PID != res[0].Server.PID || res[i].Server.PID == old.PID {
			t.Errorf("attach %d: %+v (attach 0: pid %d; the dead one: pid %d)", i, res[i].Server, res[0].Server.PID, old.PID)
		}
		b, _ := json.Marshal(res[i])
		if strings.Contains(string(b), oldToken) {
			t.Errorf("attach %d printed the retired token: %s", i, b)
		}
	}
}

// apiCall sends an authenticated API request to the server at addr and
// decodes the answer.
func apiCall(t *testing.T, addr, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %.200s", method, path, resp.StatusCode, data)
	}
	if len(data) > 16<<10 {
		t.Errorf("%s %s: an answer of %d bytes", method, path, len(data))
	}
	return resp.StatusCode, m
}

// A checkout of another repository that majlis never registered is a
// repository mismatch (409), not "not initialized"; input of any size
// is echoed clipped.
func TestForeignCheckoutAndHugeInput(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg)
	token := leaseToken(t, tg)
	other := fixtures.NewRepo(t).Dir
	for _, c := range []struct {
		path string
		body any
	}{
		{"/api/v1/check", wire.CheckRequest{Checkout: other, Holder: "h"}},
		{"/api/v1/begin", wire.BeginRequest{Task: "T-1", Paths: []string{"src/**"}, Shared: true, Checkout: other}},
	} {
		code, m := apiCall(t, st.Address, token, "POST", c.path, c.body)
		if e := obj(m, "error"); code != http.StatusConflict || e["code"] != "repository_mismatch" {
			t.Errorf("%s in another, unregistered repository: %d %v", c.path, code, m)
		}
	}
	huge := strings.Repeat("h", 600<<10)
	code, m := apiCall(t, st.Address, token, "POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: huge, Resources: []string{"host:x"}})
	if e := obj(m, "error"); code != http.StatusBadRequest || e["code"] != "invalid_argument" || !strings.Contains(e["message"].(string), "bytes in all") {
		t.Errorf("a 600 KB holder: %d %.300v", code, m)
	}
}

// waitLive waits until the server at addr answers liveness with a body
// for which cond holds.
func waitLive(t *testing.T, addr string, what string, cond func(*wire.Live) bool) *wire.Live {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childWait)
	defer cancel()
	var last *wire.Live
	if err := waitFor(ctx, func() bool {
		a, err := serverctl.AskLive(context.Background(), addr, time.Second)
		if err == nil {
			last = a
		}
		return err == nil && cond(a)
	}); err != nil {
		t.Fatalf("%s: never; last liveness answer %+v", what, last)
	}
	return last
}

// 32 clients (the default pool) send their headers and part of a body,
// then stall: they hold connections, not handlers, and a well-formed
// request is served.
func TestStalledBodiesHoldNoHandler(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg)
	token := leaseToken(t, tg)
	const stalled = DefaultMaxHandlers
	for range stalled {
		c, err := net.Dial("tcp", st.Address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /api/v1/leases/acquire HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"holder\": \"st", st.Address, token)
	}
	waitLive(t, st.Address, "32 bodies being read", func(l *wire.Live) bool { return l.Reading == stalled })
	code, m := apiCall(t, st.Address, token, "POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "h", Resources: []string{"host:one"}})
	if code != http.StatusOK {
		t.Fatalf("a well-formed request beside %d stalled bodies: %d %v", stalled, code, m)
	}
	if l := waitLive(t, st.Address, "liveness", func(*wire.Live) bool { return true }); l.Reading != stalled || l.Busy != 0 {
		t.Errorf("after: %+v, want %d reading, none busy", l, stalled)
	}
}

// serveFailpoints starts the failpoints binary as the server of dir with
// the given failpoints and serve flags, and kills it when the test ends.
func serveFailpoints(t *testing.T, dir string, tg serverctl.Target, failpoints string, flags ...string) *serverctl.Status {
	t.Helper()
	bin := fixtures.FailpointsBinary(t)
	o := serverctl.StartOptions{Command: append([]string{bin, "serve", "--repo", dir}, flags...), Timeout: childWait,
		Env: append(os.Environ(), "MAJLIS_FAILPOINTS="+failpoints), Probe: serverctl.ProbeOptions{Timeout: 2 * time.Second}}
	res, err := serverctl.Start(context.Background(), tg, o)
	if err != nil {
		t.Fatal(err)
	}
	owner := mustOwner(t, res.Server)
	t.Cleanup(func() { killOwner(t, owner) })
	return res.Server
}

// 32 calls held in their handlers (a failpoint) fill the pool: the next
// call is answered 503 busy with Retry-After within the bounded wait,
// before any effect, while liveness still answers.
func TestFullPoolAnswersBusy(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	gate := filepath.Join(t.TempDir(), "gate")
	st := serveFailpoints(t, dir, tg, "server/handler=wait("+gate+")", "--busy-wait", "50ms")
	token := leaseToken(t, tg)
	var wg sync.WaitGroup
	codes := make([]int, DefaultMaxHandlers)
	for i := range DefaultMaxHandlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", "http://"+st.Address+"/api/v1/leases", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		}()
	}
	waitLive(t, st.Address, "a full pool", func(l *wire.Live) bool { return l.Busy == DefaultMaxHandlers })

	b, _ := json.Marshal(wire.AcquireRequest{Holder: "late", Resources: []string{"host:late"}})
	req, _ := http.NewRequest("POST", "http://"+st.Address+"/api/v1/leases/acquire", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"code":"busy"`) {
		t.Fatalf("a call beside a full pool: %s, Retry-After %q: %s", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	if s, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || s.State != serverctl.Running || s.Busy != DefaultMaxHandlers {
		t.Fatalf("liveness with a full pool: %v %+v", err, s)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("held call %d: %d", i, c)
		}
	}
	if code, m := apiCall(t, st.Address, token, "GET", "/api/v1/leases?holder=late", nil); code != http.StatusOK || len(m["leases"].([]any)) != 0 {
		t.Errorf("the busy call had an effect: %d %v", code, m)
	}
}

// Idle connections beyond the descriptor limit of the server (a helper
// process whose hard RLIMIT_NOFILE is lowered to 128): the server closes
// the oldest instead of running out of descriptors, answers liveness,
// and keeps renewing its lease.
func TestIdleConnectionsPastTheDescriptorLimit(t *testing.T) {
	t.Parallel()
	const limit, flood = 128, 300
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg, nofileEnv+"="+strconv.Itoa(limit), fenceEnv+"=5ms")
	before := leaseRecord(t, tg)
	var closed atomic.Int64
	for range flood {
		c, err := net.Dial("tcp", st.Address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			var b [1]byte
			c.Read(b[:]) // returns once the server closes it
			closed.Add(1)
		}()
	}
	l := waitLive(t, st.Address, "the flood's oldest connections closed", func(l *wire.Live) bool {
		return closed.Load() >= flood-int64(l.MaxConnections)
	})
	if l.MaxConnections > limit/2 || l.Connections > l.MaxConnections || !l.Holder {
		t.Fatalf("liveness after the flood: %+v", l)
	}
	// Renewed twice since: its fence checks (every 5 ms) and renewals
	// found descriptors throughout.
	ctx, cancel := context.WithTimeout(context.Background(), childWait)
	defer cancel()
	seen := map[time.Time]bool{before.RenewedAt: true}
	if err := waitFor(ctx, func() bool {
		seen[leaseRecord(t, tg).RenewedAt] = true
		return len(seen) >= 3
	}); err != nil {
		t.Fatalf("the lease was not renewed after the flood: %v", seen)
	}
	if rec := leaseRecord(t, tg); rec.Token != before.Token || rec.Owner.PID != st.PID {
		t.Fatalf("the lease changed hands: %+v", rec)
	}
	if s, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{}); err != nil || s.State != serverctl.Running || s.PID != st.PID {
		t.Fatalf("after the flood: %v %+v", err, s)
	}
}

// A stop while a reclaim runs: the reclaim stops at its next safe point,
// its reservation is released by its owner (never recovered), the caller
// gets 503 stopping instead of an empty reply, and a retry with the same
// request id on the next server finishes it with nothing lost.
func TestStopDuringReclaim(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	gate := filepath.Join(t.TempDir(), "gate")
	st := serveFailpoints(t, dir, tg, "reclaim/salvaged=wait("+gate+")")
	token := leaseToken(t, tg)
	code, m := apiCall(t, st.Address, token, "POST", "/api/v1/workspaces", wire.AllocateRequest{Binding: "S-1"})
	if code != http.StatusOK {
		t.Fatalf("allocate: %d %v", code, m)
	}
	ws := obj(m, "workspace")["path"].(string)
	if err := os.WriteFile(filepath.Join(ws, "work.txt"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, m = apiCall(t, st.Address, token, "POST", "/api/v1/workspaces/S-1/reclaim/preview", nil)
	if code != http.StatusOK {
		t.Fatalf("preview: %d %v", code, m)
	}
	digest := obj(m, "preview")["digest"].(string)
	reclaim := wire.ReclaimRequest{Confirm: digest, RequestID: "rq-stop"}
	type answer struct {
		code int
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		b, _ := json.Marshal(reclaim)
		req, _ := http.NewRequest("POST", "http://"+st.Address+"/api/v1/workspaces/S-1/reclaim", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- answer{resp.StatusCode, body, err}
	}()
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
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.code != http.StatusServiceUnavailable || !strings.Contains(string(a.body), `"code":"stopping"`) {
		t.Fatalf("the reclaim a stop cut: %d %s %v", a.code, a.body, a.err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	leases := filepath.Join(tg.StateDir, "leases")
	if _, err := os.Stat(filepath.Join(leases, "reclaim.S-1.lease")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reclaim reservation is still held after the stop: %v", err)
	}
	if retired, _ := filepath.Glob(filepath.Join(leases, "retired", "reclaim.S-1.*")); len(retired) != 0 {
		t.Fatalf("the reservation was recovered, not released by its owner: %v", retired)
	}
	if _, err := os.Stat(filepath.Join(ws, "work.txt")); err != nil {
		t.Fatalf("the workspace lost its file before the salvage was used: %v", err)
	}

	st = startServer(t, dir, tg)
	code, m = apiCall(t, st.Address, leaseToken(t, tg), "POST", "/api/v1/workspaces/S-1/reclaim", reclaim)
	if code != http.StatusOK || obj(m, "reclaim")["removed"] != true {
		t.Fatalf("the retry with the same request id: %d %v", code, m)
	}
	ref, _ := obj(m, "reclaim")["salvage_ref"].(string)
	out, err := exec.Command("git", "-C", dir, "show", ref+":work.txt").CombinedOutput()
	if err != nil || string(out) != "uncommitted\n" {
		t.Fatalf("the salvage %q lost the uncommitted file: %v %s", ref, err, out)
	}
}

// waitFile waits until name exists.
func waitFile(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childWait)
	defer cancel()
	if err := waitFor(ctx, func() bool { _, err := os.Stat(name); return err == nil }); err != nil {
		t.Fatalf("%s never appeared", name)
	}
}

// A heartbeat refused for a wrong token changes nothing: the holder's
// lease, kept renewed by its own heartbeat, is still renewed past its
// TTL. A TTL below the floor is refused.
func TestWrongTokenHeartbeatChangesNothing(t *testing.T) {
	t.Parallel()
	dir, tg := testRepo(t)
	st := startServer(t, dir, tg, minHBEnv+"=1s")
	tok := leaseToken(t, tg)
	code, m := apiCall(t, st.Address, tok, "POST", "/api/v1/leases/acquire", wire.AcquireRequest{Holder: "hb", Resources: []string{"host:hb"}, TTL: "1s"})
	if code != http.StatusOK {
		t.Fatalf("acquire: %d %v", code, m)
	}
	token := m["token"].(string)
	code, m = apiCall(t, st.Address, tok, "POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: token, TTL: "1s"})
	if code != http.StatusOK {
		t.Fatalf("heartbeat: %d %v", code, m)
	}
	first := expiry(t, obj(m, "heartbeat")["leases"].([]any)[0])
	code, m = apiCall(t, st.Address, tok, "POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: "mlt_wrong_token_0123456789", TTL: "1s"})
	if e := obj(m, "error"); code != http.StatusConflict || e["code"] != "token_required" {
		t.Fatalf("a heartbeat with a wrong token: %d %v", code, m)
	}
	code, m = apiCall(t, st.Address, tok, "POST", "/api/v1/heartbeat", wire.HeartbeatRequest{Holder: "hb", Token: token, TTL: "999ms"})
	if e := obj(m, "error"); code != http.StatusBadRequest || e["code"] != "invalid_argument" {
		t.Fatalf("a heartbeat TTL below the floor: %d %v", code, m)
	}
	// Renewed after its first expiry passed (both times are the server's).
	ctx, cancel := context.WithTimeout(context.Background(), childWait)
	defer cancel()
	var last map[string]any
	if err := waitFor(ctx, func() bool {
		code, m := apiCall(t, st.Address, tok, "GET", "/api/v1/leases?holder=hb", nil)
		ls, _ := m["leases"].([]any)
		if code != http.StatusOK || len(ls) != 1 {
			t.Fatalf("leases of hb: %d %v", code, m)
		}
		last = ls[0].(map[string]any)
		if last["state"] != "active" {
			t.Fatalf("the lease is %v after a refused heartbeat: %v", last["state"], last)
		}
		return expiry(t, last).After(first.Add(time.Second))
	}); err != nil {
		t.Fatalf("the lease was not renewed past its first expiry %v: %v", first, last)
	}
}
