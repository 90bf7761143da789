package coordination

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/internal/procid"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// View reads every live record of the repository key and of the cluster,
// and the shared policy, in one transaction.
func (l *Ledger) View(ctx context.Context) (*admission.SharedView, error) {
	if err := l.prepare(ctx); err != nil {
		return nil, err
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	resp, err := l.c.Txn(cctx).Then(clientv3.OpGet(l.repo, clientv3.WithPrefix()), clientv3.OpGet(l.cluster, clientv3.WithPrefix())).Commit()
	if err != nil {
		return nil, l.fail(err)
	}
	v := &admission.SharedView{Revision: resp.Header.Revision}
	live := map[string]bool{}
	holders := map[string]clientv3.LeaseID{}
	var recs []admission.SharedRecord
	for k, prefix := range []string{l.repo, l.cluster} {
		for _, kv := range resp.Responses[k].GetResponseRange().Kvs {
			name := strings.TrimPrefix(string(kv.Key), prefix)
			switch {
			case k == 0 && strings.HasPrefix(name, "holders/"):
				holders[string(kv.Key)] = clientv3.LeaseID(kv.Lease)
			case strings.HasPrefix(name, "live/"):
				live[strings.TrimPrefix(name, "live/")] = true
			case strings.HasPrefix(name, "rec/"):
				r, err := l.decode(kv.Key, kv.Value)
				if err != nil {
					return nil, err
				}
				r.Generation = kv.CreateRevision
				recs = append(recs, r)
			case name == "policy" && k == 0:
				var p admission.PolicySet
				if err := json.Unmarshal(kv.Value, &p); err != nil || !validPolicy(p) {
					return nil, l.malformed(kv.Key, "the shared policy is not one this majlis reads")
				}
				v.Policy = &p
			}
		}
	}
	for i := range recs {
		recs[i].Live = live[recs[i].ID]
	}
	v.Records = recs
	l.mu.Lock()
	l.holders = holders
	l.mu.Unlock()
	return v, nil
}

func validPolicy(p admission.PolicySet) bool {
	for _, k := range admission.ConflictPolicyKeys() {
		switch p.Value(k) {
		case admission.Allow, admission.Warn, admission.Block:
		default:
			return false
		}
	}
	return true
}

// decode reads a record, refusing one this majlis cannot trust.
func (l *Ledger) decode(key, value []byte) (admission.SharedRecord, error) {
	var r admission.SharedRecord
	dec := json.NewDecoder(strings.NewReader(string(value)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.ID == "" || r.Holder == "" || r.Clone == "" ||
		(r.Scope != admission.ScopeIntent && r.Scope != admission.ScopeCluster) || !strings.HasSuffix(string(key), "/"+r.ID) {
		return r, l.malformed(key, "a shared lease record this majlis cannot read")
	}
	return r, nil
}

func (l *Ledger) malformed(key []byte, why string) error {
	return &admission.Error{Op: "coordination", Err: admission.ErrMalformed, Path: string(key),
		Reason: fmt.Sprintf("%s holds %s", l.Describe(), why),
		Hint:   "a newer majlis may have written it; upgrade, or have an operator inspect the key"}
}

// prefixOf is where a record of scope sc lives.
func (l *Ledger) prefixOf(sc admission.Scope) string {
	if sc == admission.ScopeCluster {
		return l.cluster
	}
	return l.repo
}

// ttlSeconds rounds ttl up to whole seconds, at least one.
func ttlSeconds(ttl time.Duration) int64 {
	s := int64((ttl + time.Second - 1) / time.Second)
	return max(s, 1)
}

// Put writes the records in one transaction that commits only if neither
// record range changed after the view's revision. Their permission rides
// the etcd lease of their holder and TTL (rounded up to whole seconds;
// etcd raises it to its minimum): the one the view found, renewed once
// here, else a new one, named in the same transaction under holders/.
// All records of one call have one holder and clone.
func (l *Ledger) Put(ctx context.Context, v *admission.SharedView, recs []admission.SharedRecord, ttl time.Duration) ([]admission.SharedRecord, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	secs := ttlSeconds(ttl)
	hk := l.repo + "holders/" + url.PathEscape(recs[0].Clone) + "/" + url.PathEscape(recs[0].Holder) + "/" + strconv.FormatInt(secs, 10)
	lease, fresh, err := l.holderLease(cctx, hk, secs)
	if err != nil {
		return nil, err
	}
	var ops []clientv3.Op
	var wr []written
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		p := l.prefixOf(r.Scope)
		ops = append(ops, clientv3.OpPut(p+"rec/"+r.ID, string(b)), clientv3.OpPut(p+"live/"+r.ID, "", clientv3.WithLease(lease)))
		wr = append(wr, written{key: p + "rec/" + r.ID, live: p + "live/" + r.ID, rec: r})
	}
	if fresh {
		ops = append(ops, clientv3.OpPut(hk, "", clientv3.WithLease(lease)))
	}
	resp, err := l.c.Txn(cctx).If(
		clientv3.Compare(clientv3.ModRevision(l.repo).WithPrefix(), "<", v.Revision+1),
		clientv3.Compare(clientv3.ModRevision(l.cluster).WithPrefix(), "<", v.Revision+1),
	).Then(ops...).Commit()
	switch {
	case err != nil && !fresh && rpctypes.Error(err) == rpctypes.ErrLeaseNotFound:
		return nil, admission.ErrSharedChanged // it lapsed since it was renewed: read again
	case err != nil:
		return nil, l.fail(err)
	case !resp.Succeeded:
		if fresh {
			_, _ = l.c.Revoke(cctx, lease)
		}
		return nil, admission.ErrSharedChanged
	}
	out := make([]admission.SharedRecord, len(recs))
	for i, r := range recs {
		r.Generation, r.Live = resp.Header.Revision, true
		out[i] = r
		wr[i].revision = resp.Header.Revision
	}
	if a := recs[0].Attempt; a != "" && recs[0].Pending {
		l.mu.Lock()
		if l.written == nil {
			l.written = map[string][]written{}
		}
		l.written[a] = wr
		l.mu.Unlock()
	}
	return out, nil
}

// holderLease returns the etcd lease of holder key hk that the last View
// found, renewed once now; or, when there was none or it lapsed, a new
// one of secs (fresh).
func (l *Ledger) holderLease(ctx context.Context, hk string, secs int64) (id clientv3.LeaseID, fresh bool, err error) {
	l.mu.Lock()
	id, ok := l.holders[hk]
	l.mu.Unlock()
	if ok && id != 0 {
		r, err := l.c.KeepAliveOnce(ctx, id)
		switch {
		case err == nil && r.TTL > 0:
			return id, false, nil
		case err != nil && rpctypes.Error(err) != rpctypes.ErrLeaseNotFound:
			return 0, false, l.fail(err)
		}
	}
	g, err := l.c.Grant(ctx, secs)
	if err != nil {
		return 0, false, l.fail(err)
	}
	return g.ID, true, nil
}

// settleWritten settles the records of attempt as Put wrote them, in one
// transaction that commits only if none changed since; done is false
// when Put did not write them here, or one changed (then read them).
func (l *Ledger) settleWritten(ctx context.Context, attempt string, committed bool) (done bool, err error) {
	l.mu.Lock()
	wr, ok := l.written[attempt]
	delete(l.written, attempt)
	l.mu.Unlock()
	if !ok {
		return false, nil
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, w := range wr {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(w.key), "=", w.revision))
		if committed {
			r := w.rec
			r.Pending = false
			b, _ := json.Marshal(r)
			ops = append(ops, clientv3.OpPut(w.key, string(b)))
		} else {
			ops = append(ops, clientv3.OpDelete(w.key), clientv3.OpDelete(w.live))
		}
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	tr, err := l.c.Txn(cctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, l.fail(err)
	}
	return tr.Succeeded, nil
}

// Settle confirms (committed) or deletes the pending records of attempt.
func (l *Ledger) Settle(ctx context.Context, attempt string, committed bool) error {
	if done, err := l.settleWritten(ctx, attempt, committed); done || err != nil {
		return err
	}
	for try := 0; try < 8; try++ {
		cctx, cancel := l.ctx(ctx)
		resp, err := l.c.Txn(cctx).Then(clientv3.OpGet(l.repo+"rec/", clientv3.WithPrefix()), clientv3.OpGet(l.cluster+"rec/", clientv3.WithPrefix())).Commit()
		if err != nil {
			cancel()
			return l.fail(err)
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		for k, prefix := range []string{l.repo, l.cluster} {
			for _, kv := range resp.Responses[k].GetResponseRange().Kvs {
				r, err := l.decode(kv.Key, kv.Value)
				if err != nil {
					cancel()
					return err
				}
				if r.Attempt != attempt || !r.Pending {
					continue
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
				if committed {
					r.Pending = false
					b, _ := json.Marshal(r)
					ops = append(ops, clientv3.OpPut(string(kv.Key), string(b)))
				} else {
					ops = append(ops, clientv3.OpDelete(string(kv.Key)), clientv3.OpDelete(prefix+"live/"+r.ID))
				}
			}
		}
		if len(ops) == 0 {
			cancel()
			return nil
		}
		tr, err := l.c.Txn(cctx).If(cmps...).Then(ops...).Commit()
		cancel()
		if err != nil {
			return l.fail(err)
		}
		if tr.Succeeded {
			return nil
		}
	}
	return &admission.Error{Op: "coordination", Err: admission.ErrCoordinationUnavailable,
		Reason: "the records of admission " + attempt + " kept changing while they were settled", Hint: "retry"}
}

// Delete removes records and their permission.
func (l *Ledger) Delete(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	var ops []clientv3.Op
	for _, id := range ids {
		for _, p := range []string{l.repo, l.cluster} {
			ops = append(ops, clientv3.OpDelete(p+"rec/"+id), clientv3.OpDelete(p+"live/"+id))
		}
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	if _, err := l.c.Txn(cctx).Then(ops...).Commit(); err != nil {
		return l.fail(err)
	}
	return nil
}

// liveKeys reads the records and live keys of ids.
func (l *Ledger) liveKeys(ctx context.Context, ids []string) (recs map[string]*clientv3.GetResponse, live map[string]*clientv3.GetResponse, err error) {
	var ops []clientv3.Op
	for _, id := range ids {
		for _, p := range []string{l.repo, l.cluster} {
			ops = append(ops, clientv3.OpGet(p+"rec/"+id), clientv3.OpGet(p+"live/"+id))
		}
	}
	resp, err := l.c.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, nil, l.fail(err)
	}
	recs, live = map[string]*clientv3.GetResponse{}, map[string]*clientv3.GetResponse{}
	for i, id := range ids {
		for k := range 2 {
			rr := (*clientv3.GetResponse)(resp.Responses[4*i+2*k].GetResponseRange())
			lr := (*clientv3.GetResponse)(resp.Responses[4*i+2*k+1].GetResponseRange())
			if len(rr.Kvs) > 0 {
				recs[id] = rr
			}
			if len(lr.Kvs) > 0 {
				live[id] = lr
			}
		}
	}
	return recs, live, nil
}

// Renew moves the records' permission onto a new lease of ttl and records
// the new expiry; a record whose permission lapsed refuses them all.
func (l *Ledger) Renew(ctx context.Context, ids []string, ttl time.Duration, expires time.Time) error {
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	recs, live, err := l.liveKeys(cctx, ids)
	if err != nil {
		return err
	}
	lease, err := l.c.Grant(cctx, ttlSeconds(ttl))
	if err != nil {
		return l.fail(err)
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	for _, id := range ids {
		rr, lr := recs[id], live[id]
		if rr == nil || lr == nil {
			_, _ = l.c.Revoke(cctx, lease.ID)
			return &admission.Error{Op: "renew", Err: admission.ErrQuarantined, Details: map[string]any{"lease": id},
				Reason: fmt.Sprintf("lease %s lapsed in %s without release; expiry does not prove its writer stopped, so it cannot be renewed", id, l.Describe()),
				Hint:   "release it and acquire again"}
		}
		r, err := l.decode(rr.Kvs[0].Key, rr.Kvs[0].Value)
		if err != nil {
			return err
		}
		r.ExpiresAt = expires
		b, _ := json.Marshal(r)
		lk := string(lr.Kvs[0].Key)
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(lk), "=", lr.Kvs[0].CreateRevision))
		ops = append(ops, clientv3.OpPut(string(rr.Kvs[0].Key), string(b)), clientv3.OpPut(lk, "", clientv3.WithLease(lease.ID)))
	}
	resp, err := l.c.Txn(cctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return l.fail(err)
	}
	if !resp.Succeeded {
		return &admission.Error{Op: "renew", Err: admission.ErrQuarantined,
			Reason: "a lease lapsed in " + l.Describe() + " while it was renewed", Hint: "release it and acquire again"}
	}
	return nil
}

// KeepAlive renews once the etcd leases the records' permission rides,
// and this host's registration.
func (l *Ledger) KeepAlive(ctx context.Context, ids []string) error {
	l.mu.Lock()
	l.registered = false // register again: renews the host's lease
	l.mu.Unlock()
	if err := l.prepare(ctx); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	_, live, err := l.liveKeys(cctx, ids)
	if err != nil {
		return err
	}
	seen := map[clientv3.LeaseID]bool{}
	for _, lr := range live {
		id := clientv3.LeaseID(lr.Kvs[0].Lease)
		if id == 0 || seen[id] {
			continue
		}
		seen[id] = true
		if _, err := l.c.KeepAliveOnce(cctx, id); err != nil && cctx.Err() != nil {
			return l.fail(err)
		}
	}
	return nil
}

// SetPolicy stores the conflict keys of p as the shared policy.
func (l *Ledger) SetPolicy(ctx context.Context, p admission.PolicySet) error {
	shared := admission.PolicySet{SameCheckoutConflict: p.SameCheckoutConflict, CrossWorktreeOverlap: p.CrossWorktreeOverlap,
		EnforcementGap: p.EnforcementGap}
	b, _ := json.Marshal(shared)
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	if _, err := l.c.Put(cctx, l.repo+"policy", string(b)); err != nil {
		return l.fail(err)
	}
	return nil
}

// identity is this host's registration.
func (l *Ledger) identity() (HostIdentity, error) {
	if l.o.Identity != nil {
		return *l.o.Identity, nil
	}
	o, err := procid.Of(os.Getpid())
	if err != nil {
		return HostIdentity{}, err
	}
	return HostIdentity{MachineID: o.MachineID, BootID: o.BootID, Hostname: o.Hostname}, nil
}

// prepare, once per Ledger, checks the cluster's id and registers this
// host (machine id, boot id) under an etcd lease of its own, with this
// clone: a second live host with the same machine id refuses.
func (l *Ledger) prepare(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.registered {
		return nil
	}
	me, err := l.identity()
	if err != nil {
		return &admission.Error{Op: "coordination", Err: err, Reason: "cannot read this host's identity (machine id, boot id)"}
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	// Two processes of this host may register at once: the loser reads
	// again and finds the registration the winner made.
	for try := 0; try < 3; try++ {
		done, err := l.register(cctx, me)
		if err != nil || done {
			l.registered = err == nil
			return err
		}
	}
	return &admission.Error{Op: "coordination", Err: admission.ErrCoordinationUnavailable,
		Reason: "this host's registration with " + l.Describe() + " kept changing", Hint: "retry"}
}

// register makes one attempt at prepare's registration; done is false
// when another process changed the registrations meanwhile.
func (l *Ledger) register(ctx context.Context, me HostIdentity) (done bool, err error) {
	hostDir := l.hosts + me.MachineID + "/"
	mine, cloneKey := hostDir+me.BootID, l.repo+"clones/"+l.o.Clone
	resp, err := l.c.Txn(ctx).Then(clientv3.OpGet(hostDir, clientv3.WithPrefix()), clientv3.OpGet(cloneKey)).Commit()
	if err != nil {
		return false, l.fail(err)
	}
	if err := l.checkCluster(resp.Header.ClusterId); err != nil {
		return false, err
	}
	var leaseID clientv3.LeaseID
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		if string(kv.Key) == mine {
			leaseID = clientv3.LeaseID(kv.Lease)
			continue
		}
		var other HostIdentity
		_ = json.Unmarshal(kv.Value, &other)
		return false, &admission.Error{Op: "coordination", Err: admission.ErrDuplicateMachineID,
			Reason: fmt.Sprintf("another live host (%s, boot %s) registered this machine's id %s with %s: processes of the two could not be told apart",
				other.Hostname, procid.Short(strings.TrimPrefix(string(kv.Key), hostDir)), procid.Short(me.MachineID), l.Describe()),
			Hint:    "give each host its own machine id (hosts cloned from one image share it; regenerate /etc/machine-id), or wait until the other registration lapses if that host is gone",
			Details: map[string]any{"machine_id": me.MachineID, "other_host": other.Hostname}}
	}
	clone, _ := json.Marshal(map[string]string{"host": me.Hostname, "machine_id": me.MachineID, "state_dir": l.o.StateDir})
	hasClone := len(resp.Responses[1].GetResponseRange().Kvs) > 0
	if leaseID != 0 {
		if _, err := l.c.KeepAliveOnce(ctx, leaseID); err == nil {
			if !hasClone {
				if _, err := l.c.Put(ctx, cloneKey, string(clone), clientv3.WithLease(leaseID)); err != nil {
					return false, l.fail(err)
				}
			}
			return true, nil
		}
	}
	lease, err := l.c.Grant(ctx, int64(HostTTL/time.Second))
	if err != nil {
		return false, l.fail(err)
	}
	b, _ := json.Marshal(me)
	tr, err := l.c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(hostDir).WithPrefix(), "<", resp.Header.Revision+1),
		clientv3.Compare(clientv3.CreateRevision(mine), "=", 0)).
		Then(clientv3.OpPut(mine, string(b), clientv3.WithLease(lease.ID)),
			clientv3.OpPut(cloneKey, string(clone), clientv3.WithLease(lease.ID))).Commit()
	if err != nil {
		return false, l.fail(err)
	}
	if !tr.Succeeded {
		_, _ = l.c.Revoke(ctx, lease.ID)
		return false, nil
	}
	return true, nil
}

// checkCluster compares the cluster's id with the one the clone knows.
func (l *Ledger) checkCluster(id uint64) error {
	if l.checked {
		return nil
	}
	hex := strconv.FormatUint(id, 16)
	switch {
	case l.o.KnownCluster == "":
		if l.o.RecordCluster != nil {
			if err := l.o.RecordCluster(hex); err != nil {
				return err
			}
		}
	case l.o.KnownCluster != hex:
		return &admission.Error{Op: "coordination", Err: admission.ErrClusterChanged,
			Reason: fmt.Sprintf("%s has cluster id %s, not %s as before: it may have been restored from a backup, or be another cluster, and its leases may be older than what was granted",
				l.Describe(), hex, l.o.KnownCluster),
			Hint:    "once an operator has checked that the cluster holds every shared lease it should, confirm it by setting the cluster id to " + hex,
			Details: map[string]any{"cluster_id": hex, "known_cluster_id": l.o.KnownCluster}}
	}
	l.checked = true
	return nil
}

// Clones lists the clones that live hosts registered under the key.
func (l *Ledger) Clones(ctx context.Context) ([]admission.SharedClone, error) {
	if err := l.prepare(ctx); err != nil {
		return nil, err
	}
	cctx, cancel := l.ctx(ctx)
	defer cancel()
	resp, err := l.c.Get(cctx, l.repo+"clones/", clientv3.WithPrefix())
	if err != nil {
		return nil, l.fail(err)
	}
	out := []admission.SharedClone{}
	for _, kv := range resp.Kvs {
		var c struct {
			Host     string `json:"host"`
			StateDir string `json:"state_dir"`
		}
		_ = json.Unmarshal(kv.Value, &c)
		out = append(out, admission.SharedClone{Clone: strings.TrimPrefix(string(kv.Key), l.repo+"clones/"), Host: c.Host, StateDir: c.StateDir})
	}
	return out, nil
}
