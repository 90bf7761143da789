package server

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/serverctl"
	"golang.org/x/sys/unix"
)

// The test binary re-runs itself as a server (or as a plain process that
// stands for one) when childEnv names a mode.
const (
	childEnv  = "MAJLIS_SERVER_TEST_CHILD"
	dirEnv    = "MAJLIS_SERVER_TEST_DIR"
	maxEnv    = "MAJLIS_SERVER_TEST_MAX"
	fenceEnv  = "MAJLIS_SERVER_TEST_FENCE"
	ttlEnv    = "MAJLIS_SERVER_TEST_TTL"
	nofileEnv = "MAJLIS_SERVER_TEST_NOFILE" // lowers RLIMIT_NOFILE, hard limit included
	minHBEnv  = "MAJLIS_SERVER_TEST_MIN_HEARTBEAT_TTL"
	leaseTTL  = time.Second // of the test servers: stale leases expire fast
	childWait = 20 * time.Second
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "serve":
		os.Exit(childServe())
	case "sleeper":
		childSleeper()
	}
	fixtures.Main(m)
}

// childServe runs Serve as 'majlis serve' would, ready on --ready-fd.
func childServe() int {
	if n, err := strconv.ParseUint(os.Getenv(nofileEnv), 10, 64); err == nil {
		// Go raised the soft limit to the hard one at start: lower both.
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Fprintln(os.Stderr, "setrlimit:", err)
			return 1
		}
	}
	o := Options{Dir: os.Getenv(dirEnv), Version: "test", LeaseTTL: leaseTTL, DebugRoutes: true,
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }}
	o.MaxHandlers, _ = strconv.Atoi(os.Getenv(maxEnv))
	if d, err := time.ParseDuration(os.Getenv(fenceEnv)); err == nil {
		o.FenceInterval = d
	}
	if d, err := time.ParseDuration(os.Getenv(ttlEnv)); err == nil {
		o.LeaseTTL = d
	}
	if d, err := time.ParseDuration(os.Getenv(minHBEnv)); err == nil {
		o.MinHeartbeatTTL = d
	}
	for i, a := range os.Args {
		if a == "--ready-fd" && i+1 < len(os.Args) {
			fd, _ := strconv.Atoi(os.Args[i+1])
			f := os.NewFile(uintptr(fd), "ready")
			o.Ready = func(addr string) { fmt.Fprintf(f, "ready %s\n", addr); f.Close() }
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		if errors.Is(err, ErrFenced) {
			return 7
		}
		return 1
	}
	return 0
}

// childSleeper catches SIGTERM, says so on stdout, and keeps running: a
// process a stop must not signal.
func childSleeper() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	fmt.Println("sleeping")
	for range c {
		fmt.Println("term")
	}
}

// testRepo is a registered repository.
func testRepo(t testing.TB) (string, serverctl.Target) {
	t.Helper()
	r := fixtures.NewRepo(t)
	if _, err := provider.Init(context.Background(), r.Dir, provider.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	tg, err := serverctl.Locate(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r.Dir, tg
}

// startOpts runs this test binary as the server of dir.
func startOpts(dir string, env ...string) serverctl.StartOptions {
	e := append(os.Environ(), childEnv+"=serve", dirEnv+"="+dir)
	return serverctl.StartOptions{Command: []string{os.Args[0]}, Env: append(e, env...), Timeout: childWait,
		Probe: serverctl.ProbeOptions{Timeout: 2 * time.Second}}
}

// startServer starts a server for dir and stops it (by force) when the
// test ends.
func startServer(t testing.TB, dir string, tg serverctl.Target, env ...string) *serverctl.Status {
	t.Helper()
	res, err := serverctl.Start(context.Background(), tg, startOpts(dir, env...))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Started || res.Server.State != serverctl.Running {
		t.Fatalf("start: started=%v, state %s (%s)", res.Started, res.Server.State, res.Server.Reason)
	}
	owner := mustOwner(t, res.Server)
	t.Cleanup(func() { killOwner(t, owner) })
	return res.Server
}

// mustOwner reads the owner identity of the server st from its lease.
func mustOwner(t testing.TB, st *serverctl.Status) procid.Owner {
	t.Helper()
	o, err := procid.Of(st.PID)
	if err != nil || o.StartTime != st.StartTime {
		t.Fatalf("server pid %d: %v (start time %d, want %d)", st.PID, err, o.StartTime, st.StartTime)
	}
	return o
}

// killOwner kills the exact process o, if it still runs, and waits until
// it is dead (serverctl.Start reaps the servers it spawned).
func killOwner(t testing.TB, o procid.Owner) {
	t.Helper()
	if _, err := serverctl.Terminate(context.Background(), o, time.Millisecond); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	waitDead(t, o)
}

func waitDead(t testing.TB, o procid.Owner) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childWait)
	defer cancel()
	// Reaped, not only a zombie: a zombie's other threads may still hold
	// its files (the lease's witness lock) for a moment.
	if err := waitFor(ctx, func() bool { return errors.Is(syscall.Kill(o.PID, 0), syscall.ESRCH) }); err != nil {
		t.Fatalf("pid %d did not exit", o.PID)
	}
}

// startSleeper starts a process that catches SIGTERM and reports it.
func startSleeper(t *testing.T) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=sleeper")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "sleeping" {
		t.Fatalf("sleeper did not start: %q", sc.Text())
	}
	return cmd, sc
}

// writeLease publishes rec as the server lease by hand (replacing any),
// as a process that is not this package would.
func writeLease(t *testing.T, tg serverctl.Target, rec reservation.Record) {
	t.Helper()
	rec.Format, rec.Resource, rec.Purpose = reservation.Format, serverctl.Resource, serverctl.Purpose
	if rec.Token == "" {
		rec.Token = newNonce()
	}
	if rec.Generation == 0 {
		rec.Generation = 99
	}
	now := time.Now().UTC()
	rec.AcquiredAt, rec.RenewedAt, rec.ExpiresAt = now, now, now.Add(time.Hour)
	if rec.Metadata == nil {
		rec.Metadata = map[string]string{}
	}
	data, _, err := durable.Seal("lease", &rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tg.StateDir, "leases")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "test-lease.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, serverctl.Resource+".lease")); err != nil {
		t.Fatal(err)
	}
}

// leaseToken reads the token of the current server lease.
func leaseToken(t testing.TB, tg serverctl.Target) string {
	t.Helper()
	return leaseRecord(t, tg).Token
}

// leaseRecord reads the current server lease.
func leaseRecord(t testing.TB, tg serverctl.Target) *reservation.Record {
	t.Helper()
	d, err := reservation.Open(filepath.Join(tg.StateDir, "leases"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec, err := d.Inspect(serverctl.Resource)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// get sends an API request to addr with the given token and Host.
func get(t *testing.T, addr, path, token, host string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// newNonce is a fresh random token, 32 hex digits (a lease token's form).
func newNonce() string {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// waitFor polls cond with backoff until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	for d := time.Millisecond; !cond(); d = min(2*d, 50*time.Millisecond) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return nil
}
