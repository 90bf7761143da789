package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// BenchmarkLiveBusy measures the liveness route as the probe calls it (a
// fresh connection, a fresh nonce) on one server, first idle, then while
// 64 API requests that never finish fill its handler pool. It reports
// p50 and p99 of both (idle-p50-ns, idle-p99-ns, p50-ns, p99-ns) and the
// ratio of the p99s (x-idle-p99). Goal: busy p99 at most 2x idle, and
// under 10 ms.
func BenchmarkLiveBusy(b *testing.B) {
	const busy = 64
	dir, tg := testRepo(b)
	st := startServer(b, dir, tg, maxEnv+"=64")
	token := leaseToken(b, tg)
	probe := func() time.Duration {
		t0 := time.Now()
		if _, err := serverctl.AskLive(context.Background(), st.Address, time.Second); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	idle := make([]time.Duration, 0, b.N)
	for range b.N {
		idle = append(idle, probe())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range busy {
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
	if err := waitFor(wctx, func() bool {
		a, err := serverctl.AskLive(context.Background(), st.Address, time.Second)
		return err == nil && a.Busy == busy
	}); err != nil {
		b.Fatal("the pool never filled")
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lat = append(lat, probe())
	}
	b.StopTimer()
	p50, p99 := percentiles(lat)
	i50, i99 := percentiles(idle)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(i50.Nanoseconds()), "idle-p50-ns")
	b.ReportMetric(float64(i99.Nanoseconds()), "idle-p99-ns")
	b.ReportMetric(float64(p99)/float64(i99), "x-idle-p99")
}

// percentiles returns the p50 and p99 of lat (which it sorts).
func percentiles(lat []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// BenchmarkCheapRoute measures requests per second of a cheap
// authenticated route (GET /api/v1/leases?holder=H: one indexed ledger
// read) from 64 concurrent keep-alive clients, through the server (its
// guards, handler pool, body handling, JSON), against a bare net/http
// handler in this process doing the same work (the same admission List
// on the same repository, encoded the same way), alternately in rounds.
// Reports server-rps, bare-rps and x-bare (bare/server: the slowdown).
func BenchmarkCheapRoute(b *testing.B) {
	const clients = 64
	dir, tg := testRepo(b)
	st := startServer(b, dir, tg, maxEnv+"=64")
	token := leaseToken(b, tg)
	ctx := context.Background()
	p, err := provider.Open(ctx, dir, provider.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	adm, err := p.Admission(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bare := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ls, err := adm.List(r.Context(), admission.ListRequest{Holder: r.URL.Query().Get("holder")})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if ls == nil {
			ls = []admission.Lease{}
		}
		writeJSON(w, http.StatusOK, &wire.LeasesResponse{Leases: ls})
	})}
	go bare.Serve(ln)
	defer bare.Close()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer hc.CloseIdleConnections()
	run := func(addr string, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/leases?holder=bench", nil)
					req.Header.Set("Authorization", "Bearer "+token)
					resp, err := hc.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("%s: %s", addr, resp.Status)
						return
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	run(st.Address, clients) // warm both: connections, caches
	run(ln.Addr().String(), clients)
	var ours, floor time.Duration
	const rounds = 4
	n := max(b.N/rounds, clients)
	b.ResetTimer()
	for range rounds {
		ours += run(st.Address, n)
		floor += run(ln.Addr().String(), n)
	}
	b.StopTimer()
	total := float64(n * rounds)
	b.ReportMetric(total/ours.Seconds(), "server-rps")
	b.ReportMetric(total/floor.Seconds(), "bare-rps")
	b.ReportMetric(ours.Seconds()/floor.Seconds(), "x-bare")
}

// BenchmarkAttach times 'majlis server attach' to a running server against
// 'majlis version' (a process start and nothing else), alternately.
func BenchmarkAttach(b *testing.B) {
	bin := fixtures.FailpointsBinary(b)
	dir, tg := testRepo(b)
	if out, err := exec.Command(bin, "server", "start", "--repo", dir).CombinedOutput(); err != nil {
		b.Fatalf("server start: %v\n%s", err, out)
	}
	st, err := serverctl.Probe(context.Background(), tg, serverctl.ProbeOptions{})
	if err != nil || st.State != serverctl.Running {
		b.Fatalf("after start: %v %+v", err, st)
	}
	owner := mustOwner(b, st)
	b.Cleanup(func() { killOwner(b, owner) })
	var attach, version time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if out, err := exec.Command(bin, "server", "attach", "--repo", dir).CombinedOutput(); err != nil {
			b.Fatalf("attach: %v\n%s", err, out)
		}
		t1 := time.Now()
		if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
			b.Fatalf("version: %v\n%s", err, out)
		}
		attach += t1.Sub(t0)
		version += time.Since(t1)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(attach.Nanoseconds())/n, "attach-ns/op")
	b.ReportMetric(float64(version.Nanoseconds())/n, "version-ns/op")
	b.ReportMetric(float64(attach)/float64(version), "x-version")
}

// BenchmarkFloorLive is the floor of BenchmarkLiveBusy: the same request
// on a fresh connection to a bare net/http server on 127.0.0.1 that
// answers a fixed body, with nothing else running.
func BenchmarkFloorLive(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"repository":"x","pid":1,"start_time":1,"holder":true}` + "\n")
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	go hs.Serve(ln)
	defer hs.Close()
	addr := ln.Addr().String()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := serverctl.AskLive(context.Background(), addr, time.Second); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	p50, p99 := percentiles(lat)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
}
