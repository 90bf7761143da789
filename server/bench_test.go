package server

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// BenchmarkLiveBusy measures the liveness route as the probe calls it (a
// fresh connection, a fresh nonce) while 64 API requests that never finish
// fill the server's handler pool. Goal: p99 under 2 ms.
func BenchmarkLiveBusy(b *testing.B) {
	const busy = 64
	dir, tg := testRepo(b)
	st := startServer(b, dir, tg, maxEnv+"=64")
	token := leaseToken(b, tg)
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
		a, err := askLive(context.Background(), st.Address, time.Second)
		return err == nil && a.body.Busy == busy
	}); err != nil {
		b.Fatal("the pool never filled")
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := askLive(context.Background(), st.Address, time.Second); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkAttach times 'majlis server attach' to a running server against
// 'majlis version' (a process start and nothing else), alternately.
func BenchmarkAttach(b *testing.B) {
	bin := fixtures.FailpointsBinary(b)
	dir, tg := testRepo(b)
	if out, err := exec.Command(bin, "server", "start", "--repo", dir).CombinedOutput(); err != nil {
		b.Fatalf("server start: %v\n%s", err, out)
	}
	st, err := Probe(context.Background(), tg, ProbeOptions{})
	if err != nil || st.State != Running {
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
		lc, err := dialLive(context.Background(), addr, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/live?nonce="+newNonce(), nil)
		if _, _, err := lc.do(req); err != nil {
			b.Fatal(err)
		}
		lc.Close()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
