package server

import (
	"fmt"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// Options configure Serve.
type Options struct {
	Dir     string // any worktree of the repository ("" is the working directory)
	Version string // majlis version, reported by the liveness route
	// Provider configures the repository's provider, which serves the
	// API's requests (reservation TTL, host ledger, clock, logger).
	Provider provider.Options

	// MaxHandlers bounds the API handlers running at once; zero means
	// DefaultMaxHandlers. Liveness, readiness and shutdown are not counted.
	MaxHandlers int
	// LeaseTTL is the server lease's time to expiry, renewed at a third of
	// it; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// FenceInterval is how often the server re-reads its lease; zero
	// means DefaultFenceInterval.
	FenceInterval time.Duration
	// Ready, if set, is called once when the server serves API requests.
	Ready func(addr string)
	// Logf, if set, receives one line per notable event.
	Logf func(format string, args ...any)
	// DebugRoutes enables GET /api/v1/debug/block, an authenticated API
	// route that holds a handler until the request ends: tests and
	// benchmarks fill the pool with it.
	DebugRoutes bool

	// HeartbeatGrace is how long after the last heartbeat a holder's
	// leases are still renewed; zero means DefaultHeartbeatGrace.
	HeartbeatGrace time.Duration
	// HeartbeatTick is how often renewals are due-checked; zero means
	// DefaultHeartbeatTick. It is cut to a third of MinHeartbeatTTL.
	HeartbeatTick time.Duration
	// MinHeartbeatTTL is the smallest TTL a heartbeat may ask for; zero
	// means DefaultMinHeartbeatTTL.
	MinHeartbeatTTL time.Duration

	// HeaderTimeout bounds the reading of a request's headers; zero
	// means DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's body, which is read
	// whole before the request waits for a handler; zero means
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// BusyWait is how long a request waits for a free handler before it
	// is answered 503 busy; zero means DefaultBusyWait.
	BusyWait time.Duration
	// IdleTimeout closes a connection idle this long between requests;
	// zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConns caps the open connections; at the cap the oldest one that
	// carries no authenticated request is closed for each new one. Zero
	// means half the descriptor limit, at most DefaultMaxConns.
	MaxConns int
	// PurgeInterval is how often the kept trash that is due is purged in
	// the background (purge.go); zero means DefaultPurgeInterval.
	PurgeInterval time.Duration
	// PoolInterval is how often the warm pool is topped up to the
	// policy's pool.size in the background (pool.go); zero means
	// DefaultPoolInterval.
	PoolInterval time.Duration
}

// Defaults of Options.
const (
	DefaultMaxHandlers   = 32
	DefaultLeaseTTL      = 30 * time.Second
	DefaultFenceInterval = time.Second
	DefaultHeaderTimeout = 5 * time.Second
	DefaultBodyTimeout   = 10 * time.Second
	DefaultBusyWait      = 5 * time.Second
	DefaultIdleTimeout   = time.Minute
)

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MB).
const maxHeaderBytes = 64 << 10

// withDefaults fills in the zero options; it refuses negative bounds.
func (o Options) withDefaults() (Options, error) {
	if o.MaxHandlers < 0 || o.MaxConns < 0 {
		return o, &Error{Op: "serve", Err: ErrInvalid, Reason: fmt.Sprintf("max handlers %d or max connections %d is negative", o.MaxHandlers, o.MaxConns)}
	}
	if o.MaxHandlers == 0 {
		o.MaxHandlers = DefaultMaxHandlers
	}
	if o.MaxConns == 0 {
		o.MaxConns = maxConns()
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	o.LeaseTTL = orDefault(o.LeaseTTL, DefaultLeaseTTL)
	o.FenceInterval = orDefault(o.FenceInterval, DefaultFenceInterval)
	o.HeartbeatGrace = orDefault(o.HeartbeatGrace, DefaultHeartbeatGrace)
	o.MinHeartbeatTTL = orDefault(o.MinHeartbeatTTL, DefaultMinHeartbeatTTL)
	o.HeartbeatTick = min(orDefault(o.HeartbeatTick, DefaultHeartbeatTick), o.MinHeartbeatTTL/3)
	o.HeaderTimeout = orDefault(o.HeaderTimeout, DefaultHeaderTimeout)
	o.BodyTimeout = orDefault(o.BodyTimeout, DefaultBodyTimeout)
	o.BusyWait = orDefault(o.BusyWait, DefaultBusyWait)
	o.IdleTimeout = orDefault(o.IdleTimeout, DefaultIdleTimeout)
	o.PurgeInterval = orDefault(o.PurgeInterval, DefaultPurgeInterval)
	o.PoolInterval = orDefault(o.PoolInterval, DefaultPoolInterval)
	// The server acts for other processes: being its parent (or the
	// server itself) must not stand in for a lease's token.
	o.Provider.ServesOthers = true
	return o, nil
}

// orDefault is d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
