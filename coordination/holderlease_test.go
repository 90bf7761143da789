package coordination_test

import (
	"context"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/coordination"
	"github.com/majlis-dev/majlis/coordination/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestHolderLeaseReused: a holder's shared leases of one TTL ride one etcd
// lease (no grant per admission); once that lease is gone, the next
// admission rides a new one. Pending records are confirmed without being
// read again, and still when they changed since they were written.
func TestHolderLeaseReused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	l := ledger(t, coordination.Options{})
	prefix := etcdtest.Prefix(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdtest.Shared(t).Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put := func(id, attempt string, ttl time.Duration) clientv3.LeaseID {
		t.Helper()
		v, err := l.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := admission.SharedRecord{ID: id, Scope: admission.ScopeIntent, Resource: "intent:" + id, Key: id, Clone: l.Clone(),
			Holder: "T-1", Attempt: attempt, Pending: attempt != "", ExpiresAt: time.Now().Add(ttl)}
		if _, err := l.Put(ctx, v, []admission.SharedRecord{r}, ttl); err != nil {
			t.Fatal(err)
		}
		g, err := c.Get(ctx, prefix+"repo/example.com%2Fledger/live/"+id)
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("live key of %s: %v %v", id, g, err)
		}
		return clientv3.LeaseID(g.Kvs[0].Lease)
	}
	one, two := put("L-1", "", 30*time.Second), put("L-2", "", 30*time.Second)
	if one != two {
		t.Fatalf("two admissions of one holder and TTL ride leases %x and %x", one, two)
	}
	if other := put("L-3", "", time.Minute); other == one {
		t.Fatal("another TTL rides the same lease")
	}
	if _, err := c.Revoke(ctx, one); err != nil {
		t.Fatal(err)
	}
	if again := put("L-4", "", 30*time.Second); again == one {
		t.Fatal("a revoked lease was reused")
	}

	// Settle after Put, as written, then after a change (a renewal).
	settled := func(id string) bool {
		t.Helper()
		v, err := l.View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range v.Records {
			if r.ID == id {
				return !r.Pending
			}
		}
		t.Fatalf("%s is gone", id)
		return false
	}
	put("L-5", "P-5", 30*time.Second)
	if err := l.Settle(ctx, "P-5", true); err != nil || !settled("L-5") {
		t.Fatalf("settle as written: %v", err)
	}
	put("L-6", "P-6", 30*time.Second)
	if err := l.Renew(ctx, []string{"L-6"}, time.Minute, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(context.WithoutCancel(ctx), "P-6", true); err != nil || !settled("L-6") {
		t.Fatalf("settle after a change: %v", err)
	}
}
