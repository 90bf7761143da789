package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/wire"
)

// Heartbeats. A client that sends POST /api/v1/heartbeat {holder, token}
// (or calls the heartbeat tool) asks the server to keep that holder's
// active leases renewed for as long as heartbeats keep coming. Each
// heartbeat renews them at once, with the token (so a heartbeat without
// the right token refuses, as a renew would, and a refused heartbeat
// changes nothing: whoever can call the API cannot stop the renewal of
// another holder's leases). Between heartbeats the server renews them a
// third of their TTL after the last renewal; it looks every
// HeartbeatTick, at most a third of the smallest TTL a heartbeat may ask
// (MinHeartbeatTTL), so a lease is renewed at the latest two thirds into
// its TTL and never expires while heartbeats come. Once no heartbeat has come
// for longer than the grace period, the server stops renewing and forgets
// the holder: the leases then expire as usual (and are quarantined, since
// expiry does not prove the writer stopped). Nothing here depends on an
// MCP session, and nothing survives the server: after a restart the
// client's next heartbeat starts renewing again.

// Defaults of the heartbeat options.
const (
	DefaultHeartbeatGrace = time.Minute
	DefaultHeartbeatTick  = time.Second
	// DefaultMinHeartbeatTTL is the smallest TTL a heartbeat may ask
	// for (a whole number of seconds): a smaller one is refused.
	DefaultMinHeartbeatTTL = 3 * time.Second
)

// beats tracks the holders whose leases the server keeps renewed.
type beats struct {
	grace time.Duration
	now   func() time.Time
	renew func(ctx context.Context, req admission.RenewRequest) (*admission.RenewResult, error)
	// share keeps this host's registration with the coordination cluster
	// and the etcd leases of the clone's active shared leases alive
	// ((*admission.Service).Heartbeat; it does nothing without a cluster).
	share func(ctx context.Context) error
	logf  func(format string, args ...any)
	// shareFailing: the last share failed (logged once, until it works).
	shareFailing bool

	mu sync.Mutex
	m  map[string]*beat // by holder
}

type beat struct {
	token   string
	ttl     time.Duration
	last    time.Time // the last heartbeat
	renewed time.Time // the last renewal
}

func newBeats(grace time.Duration, now func() time.Time, adm *admission.Service, logf func(string, ...any)) *beats {
	return &beats{grace: grace, now: now, renew: adm.Renew, share: adm.Heartbeat, logf: logf, m: map[string]*beat{}}
}

func (a *api) heartbeat(ctx context.Context, q *wire.HeartbeatRequest) (*wire.HeartbeatResponse, error) {
	ttl, err := duration("ttl", q.TTL)
	if err != nil {
		return nil, err
	}
	if ttl == 0 {
		ttl = admission.DefaultTTL
	}
	if min := a.s.o.MinHeartbeatTTL; ttl < min {
		return nil, &admission.Error{Op: "heartbeat", Err: admission.ErrInvalid,
			Reason:  fmt.Sprintf("ttl %v is below the heartbeat's floor of %v", ttl, min),
			Hint:    fmt.Sprintf("send a ttl of %v or more", min),
			Details: map[string]any{"argument": "ttl", "min_ttl": min.String()}}
	}
	hb, err := a.s.beats.beat(ctx, q.Holder, q.Token, ttl)
	if err != nil {
		return nil, err
	}
	return &wire.HeartbeatResponse{Heartbeat: hb}, nil
}

// beat renews the holder's leases now and keeps renewing them until
// grace passes without another beat. A beat that is refused (a wrong
// token, no lease) changes nothing, the renewal of the holder's leases
// by an earlier beat included.
func (b *beats) beat(ctx context.Context, holder, token string, ttl time.Duration) (*wire.Heartbeat, error) {
	res, err := b.renewLeases(ctx, holder, token, ttl)
	if err != nil {
		return nil, err
	}
	now := b.now()
	b.mu.Lock()
	b.m[holder] = &beat{token: token, ttl: ttl, last: now, renewed: now}
	b.mu.Unlock()
	hb := &wire.Heartbeat{Holder: holder, Leases: res.Leases, Warnings: res.Warnings, TTL: ttl.String(), Grace: b.grace.String(),
		RenewUntil: now.Add(b.grace).UTC()}
	if hb.Leases == nil {
		hb.Leases = []admission.Lease{}
	}
	if hb.Warnings == nil {
		hb.Warnings = []admission.Warning{}
	}
	return hb, nil
}

// renewLeases renews the holder's active leases for ttl with its token:
// the one way heartbeats renew, at a beat and in the sweep.
func (b *beats) renewLeases(ctx context.Context, holder, token string, ttl time.Duration) (*admission.RenewResult, error) {
	return b.renew(ctx, admission.RenewRequest{Holder: holder, Token: token, TTL: ttl})
}

// forget stops renewing holder's leases (they were released).
func (b *beats) forget(holder string) {
	b.mu.Lock()
	delete(b.m, holder)
	b.mu.Unlock()
}

// holders lists the holders being kept renewed.
func (b *beats) holders() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	hs := make([]string, 0, len(b.m))
	for h := range b.m {
		hs = append(hs, h)
	}
	return hs
}

// sweep forgets the holders whose heartbeats stopped and renews the
// leases of the others that are due (a third of their TTL after the last
// renewal). A renewal that fails (the leases were released, quarantined,
// or the token no longer fits) forgets the holder.
func (b *beats) sweep(ctx context.Context) {
	now := b.now()
	type due struct {
		holder string
		bt     beat
	}
	var todo []due
	b.mu.Lock()
	for h, bt := range b.m {
		switch {
		case now.Sub(bt.last) > b.grace:
			delete(b.m, h)
			b.logf("no heartbeat from %s for %s: its leases are no longer renewed", h, now.Sub(bt.last).Round(time.Second))
		case now.Sub(bt.renewed) >= bt.ttl/3:
			todo = append(todo, due{h, *bt})
		}
	}
	b.mu.Unlock()
	for _, d := range todo {
		_, err := b.renewLeases(ctx, d.holder, d.bt.token, d.bt.ttl)
		b.mu.Lock()
		cur := b.m[d.holder]
		switch {
		case cur == nil || cur.last != d.bt.last:
			// A heartbeat (which renewed) or a release came meanwhile.
		case err != nil && !errors.Is(err, context.Canceled):
			delete(b.m, d.holder)
			b.logf("renewing the leases of %s failed, no longer renewing them: %v", d.holder, err)
		case err == nil:
			cur.renewed = now
		}
		b.mu.Unlock()
	}
}

// run sweeps every tick until ctx ends, and keeps the shared
// registration alive (keepShared) beside the sweep: a coordination
// cluster that answers slowly or not at all never delays the renewal of
// local leases. It returns once the last keepShared has ended.
func (b *beats) run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	var shared sync.WaitGroup
	defer shared.Wait()
	busy := make(chan struct{}, 1) // one keepShared at a time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			select {
			case busy <- struct{}{}:
				shared.Add(1)
				go func() {
					defer shared.Done()
					defer func() { <-busy }()
					b.keepShared(ctx)
				}()
			default: // the last one is still running
			}
			b.sweep(ctx)
		}
	}
}

// keepShared renews, once, this host's registration with the coordination
// cluster and the etcd leases of the clone's active shared leases. A
// failure is logged when it starts and when it ends, not at every tick.
func (b *beats) keepShared(ctx context.Context) {
	if b.share == nil {
		return
	}
	err := b.share(ctx)
	if ctx.Err() != nil {
		return
	}
	b.mu.Lock()
	was := b.shareFailing
	b.shareFailing = err != nil
	b.mu.Unlock()
	switch {
	case err != nil && !was:
		b.logf("keeping this host's shared leases alive with the coordination cluster failed (retrying every tick): %v", err)
	case err == nil && was:
		b.logf("the coordination cluster answers again: this host's shared leases are kept alive")
	}
}
