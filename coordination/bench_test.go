package coordination_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
	"github.com/majlis-dev/majlis/fixtures"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkSharedAdmission5: the admission of five intents shared
// through etcd (read, pending records, the local transaction, the
// confirmation), against its floor, one bare etcd transaction putting the
// same keys (the five records and their permission keys) on the same
// server, which fsyncs as a real member does. They alternate within one
// loop and report their times and ratio (admission-ns/op, etcd-ns/op,
// x-etcd). Beside them, the admission of five cluster names, decided in
// one etcd transaction (cluster-ns/op, cluster-x-etcd).
func BenchmarkSharedAdmission5(b *testing.B) {
	srv, err := etcdtest.StartDurable("")
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	repo := fixtures.NewRepo(b)
	state := filepath.Join(repo.CommonDir(), "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		b.Fatal(err)
	}
	l, err := coordination.Open(coordination.Options{Endpoints: []string{srv.Endpoint}, RepositoryKey: "example.com/bench",
		Clone: cloneOf(state), StateDir: state, Prefix: "/bench/"})
	if err != nil {
		b.Fatal(err)
	}
	s, err := admission.Open(context.Background(), state, admission.Options{HostLedger: filepath.Join(b.TempDir(), "host.db"), Shared: l})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	resources := []string{"intent:src/auth/**", "intent:src/api/**", "intent:docs/x.md", "intent:lib/**", "intent:cmd/tool"}
	const token = "bench-token-0123456789abcdef"

	names := []string{"cluster:bench-1", "cluster:bench-2", "cluster:bench-3", "cluster:bench-4", "cluster:bench-5"}

	var ours, bare, cluster time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tc := time.Now()
		if _, err := s.Acquire(ctx, admission.AcquireRequest{Token: token, Holder: "me", Resources: names}); err != nil {
			b.Fatal(err)
		}
		cluster += time.Since(tc)
		t0 := time.Now()
		if _, err := s.Acquire(ctx, admission.AcquireRequest{Token: token, Holder: "me", Checkout: repo.Dir, Resources: resources}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var ops []clientv3.Op
		for k := range resources {
			id := "/floor/" + strconv.Itoa(i) + "/" + strconv.Itoa(k)
			ops = append(ops, clientv3.OpPut(id+"/rec", `{"id":"L-0123456789abcdef","scope":"intent","resource":"intent:src/auth/**","holder":"me"}`),
				clientv3.OpPut(id+"/live", ""))
		}
		if _, err := c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/floor/").WithPrefix(), "<", 1<<62)).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		ours += t1.Sub(t0)
		bare += t2.Sub(t1)
		b.StopTimer()
		if _, err := s.Release(ctx, admission.ReleaseRequest{Token: token, Holder: "me"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "admission-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/float64(b.N), "etcd-ns/op")
	b.ReportMetric(float64(ours)/float64(bare), "x-etcd")
	b.ReportMetric(float64(cluster.Nanoseconds())/float64(b.N), "cluster-ns/op")
	b.ReportMetric(float64(cluster)/float64(bare), "cluster-x-etcd")
}
