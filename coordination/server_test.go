package coordination_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/server"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestServerHeartbeatKeepsSharedAlive: a server's heartbeat renews this
// host's registration with the cluster and the etcd lease of the clone's
// active cluster lease, which nothing else renews (a command exits at
// once). Without a server, an etcd lease's time to live only decreases;
// under one, it goes back up.
func TestServerHeartbeatKeepsSharedAlive(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := etcdtest.Shared(t)
	prefix := etcdtest.Prefix(t)
	me := &coordination.HostIdentity{MachineID: "m-heartbeat", BootID: "boot-1", Hostname: "heartbeat"}
	repo := fixtures.NewRepo(t)
	if _, err := provider.Init(ctx, repo.Dir, provider.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := provider.Options{HostLedger: filepath.Join(t.TempDir(), "host.db"), EtcdEndpoints: srv.Endpoint,
		Coordination: func(_ context.Context, c admission.SharedConfig) (admission.SharedLedger, error) {
			return coordination.Open(coordination.Options{Endpoints: c.Endpoints, RepositoryKey: c.RepositoryKey, Clone: c.Clone,
				StateDir: c.StateDir, KnownCluster: c.KnownCluster, RecordCluster: c.RecordCluster, Prefix: prefix, Identity: me})
		}}
	p, err := provider.Open(ctx, repo.Dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	adm, err := p.Admission(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adm.SetPolicy(ctx, admission.PolicyRepositoryKey, "example.com/heartbeat"); err != nil {
		t.Fatal(err)
	}
	adm.Close()
	if adm, err = p.Admission(ctx); err != nil { // now with the key: shared
		t.Fatal(err)
	}
	defer adm.Close()
	res, err := adm.Acquire(ctx, admission.AcquireRequest{Holder: "T-1", TTL: time.Minute, Checkout: repo.Dir, Resources: []string{"cluster:heartbeat-deploy"}})
	if err != nil {
		t.Fatal(err)
	}

	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leaseOf := func(key string) clientv3.LeaseID {
		t.Helper()
		r, err := c.Get(ctx, key)
		if err != nil || len(r.Kvs) != 1 || r.Kvs[0].Lease == 0 {
			t.Fatalf("%s: %v %v", key, r, err)
		}
		return clientv3.LeaseID(r.Kvs[0].Lease)
	}
	watched := map[string]clientv3.LeaseID{
		"the host's registration": leaseOf(prefix + "hosts/" + me.MachineID + "/" + me.BootID),
		"the cluster lease":       leaseOf(prefix + "cluster/live/" + res.Leases[0].ID),
	}
	lowest := map[string]int64{}
	ttl := func(name string) int64 {
		t.Helper()
		r, err := c.TimeToLive(ctx, watched[name])
		if err != nil || r.TTL <= 0 {
			t.Fatalf("%s lapsed: %v %v", name, r, err)
		}
		return r.TTL
	}
	// Without a server, the time to live goes down.
	deadline := time.Now().Add(60 * time.Second)
	for name := range watched {
		first := ttl(name)
		for lowest[name] = first; lowest[name] == first; lowest[name] = ttl(name) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: time to live stays %d", name, first)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition
		}
	}

	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		served <- server.Serve(sctx, server.Options{Dir: repo.Dir, Version: "test", Provider: opts, HeartbeatTick: 100 * time.Millisecond,
			Ready: func(string) { close(ready) }, Logf: t.Logf})
	}()
	defer func() {
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("serve: %v", err)
	}
	// Under the server, it goes back up.
	for name := range watched {
		for ttl(name) <= lowest[name] {
			if time.Now().After(deadline) {
				t.Fatalf("%s was not renewed under the server (time to live %d)", name, lowest[name])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
