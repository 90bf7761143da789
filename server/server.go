package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
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

	// Classify maps the library's errors to the refusals the API and the
	// MCP tools return: the command line's table of codes. Nil gives every
	// failure the code "internal" (exit class 1).
	Classify Classifier
	// HeartbeatGrace is how long after the last heartbeat a holder's
	// leases are still renewed; zero means DefaultHeartbeatGrace.
	HeartbeatGrace time.Duration
	// HeartbeatTick is how often renewals are due-checked; zero means
	// DefaultHeartbeatTick.
	HeartbeatTick time.Duration

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
}

// Defaults of Options.
const (
	DefaultMaxHandlers   = 32
	DefaultLeaseTTL      = 30 * time.Second
	DefaultFenceInterval = time.Second
	DefaultHeaderTimeout = 5 * time.Second
	DefaultBodyTimeout   = 10 * time.Second
	DefaultBusyWait      = 5 * time.Second
)

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MB).
const maxHeaderBytes = 64 << 10

// Serve runs the repository's server in the calling process until ctx
// ends, an authenticated shutdown arrives, or the server lease stops being
// its own (then it returns an error wrapping ErrFenced at once, without
// touching the lease). Another live server refuses with reservation.ErrHeld.
func Serve(ctx context.Context, o Options) error {
	if o.MaxHandlers == 0 {
		o.MaxHandlers = DefaultMaxHandlers
	}
	if o.MaxHandlers < 0 {
		return &Error{Op: "serve", Err: ErrInvalid, Reason: fmt.Sprintf("max handlers %d is negative", o.MaxHandlers)}
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.FenceInterval <= 0 {
		o.FenceInterval = DefaultFenceInterval
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.HeartbeatGrace <= 0 {
		o.HeartbeatGrace = DefaultHeartbeatGrace
	}
	if o.HeartbeatTick <= 0 {
		o.HeartbeatTick = DefaultHeartbeatTick
	}
	o.HeaderTimeout = orDefault(o.HeaderTimeout, DefaultHeaderTimeout)
	o.BodyTimeout = orDefault(o.BodyTimeout, DefaultBodyTimeout)
	o.BusyWait = orDefault(o.BusyWait, DefaultBusyWait)
	// The server acts for other processes: being its parent (or the
	// server itself) must not stand in for a lease's token.
	o.Provider.ServesOthers = true
	p, err := provider.Open(ctx, o.Dir, o.Provider)
	if err != nil {
		return err
	}
	defer p.Close()
	leases, err := openLeases(p.StateDir())
	if err != nil {
		return err
	}
	defer leases.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return &Error{Op: "serve", Err: err, Reason: "cannot listen on 127.0.0.1"}
	}
	defer ln.Close()
	addr := ln.Addr().String()
	id := p.Repository().ID
	lease, err := leases.Acquire(ctx, reservation.Request{
		Resource: Resource, Purpose: Purpose, TTL: o.LeaseTTL,
		Metadata: map[string]string{metaRepository: id, metaAddress: addr, metaHolder: holderKey(id),
			metaVersion: o.Version, metaAPI: APIVersion},
	})
	if err != nil {
		return err
	}
	rec := lease.Record()
	s := &srv{
		o: o, p: p, lease: lease, addr: addr, token: rec.Token,
		sem:  make(chan struct{}, o.MaxHandlers),
		stop: make(chan struct{}),
		live: Live{Repository: id, PID: rec.Owner.PID, StartTime: rec.Owner.StartTime, TokenSHA256: TokenDigest(rec.Token),
			Version: o.Version, API: APIVersion, MaxHandlers: o.MaxHandlers},
	}
	s.holder.Store(true)
	o.Logf("server for repository %s listening on %s (pid %d, lease generation %d)", id, addr, rec.Owner.PID, rec.Generation)

	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: o.HeaderTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: log.New(logWriter(o.Logf), "", 0)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	// Warm what API requests need: the admission ledgers.
	if s.adm, err = p.Admission(ctx); err != nil {
		hs.Close()
		_ = s.release()
		return err
	}
	defer s.adm.Close()
	s.beats = newBeats(o.HeartbeatGrace, time.Now, s.adm, o.Logf)
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	go s.beats.run(bctx, o.HeartbeatTick)
	s.ready.Store(true)
	if o.Ready != nil {
		o.Ready(addr)
	}

	renew := time.NewTicker(o.LeaseTTL / 3)
	defer renew.Stop()
	fence := time.NewTicker(o.FenceInterval)
	defer fence.Stop()
	for {
		select {
		case <-ctx.Done():
			o.Logf("stopping: %v", context.Cause(ctx))
			return s.shutdown(hs)
		case <-s.stop:
			o.Logf("stopping: shutdown requested")
			return s.shutdown(hs)
		case err := <-serveErr:
			_ = s.release()
			return &Error{Op: "serve", Err: err}
		case <-renew.C:
			// Not ours any more: exit at once. Another failure (a full
			// disk) is retried at the next tick; the fence check still
			// runs, and the lease stays valid until it expires.
			if err := lease.Renew(o.LeaseTTL); errors.Is(err, reservation.ErrNotOwner) {
				return s.fenced(hs, err)
			} else if err != nil {
				o.Logf("renewing the server lease failed (retrying): %v", err)
			}
		case <-fence.C:
			if err := s.fenceCheck(leases); err != nil {
				return s.fenced(hs, err)
			}
		}
	}
}

// srv is a running server.
type srv struct {
	o     Options
	p     *provider.Provider
	adm   *admission.Service // set before ready
	beats *beats             // set before ready
	lease *reservation.Lease
	addr  string
	token string

	live   Live // fixed part of the liveness answer
	holder atomic.Bool
	ready  atomic.Bool
	busy   atomic.Int64 // requests holding a handler
	sem    chan struct{}

	waiting atomic.Int64 // requests waiting for a handler
	reading atomic.Int64 // requests whose body is being read

	stopOnce sync.Once
	stop     chan struct{}
}

// fenceCheck re-reads the lease: the token there must still be ours.
func (s *srv) fenceCheck(leases *reservation.Dir) error {
	rec, err := leases.Inspect(Resource)
	if err != nil {
		return err
	}
	if !equal(rec.Token, s.token) {
		return fmt.Errorf("the lease now carries another token (generation %d, pid %d)", rec.Generation, rec.Owner.PID)
	}
	return nil
}

// fenced ends the server at once: the lease is not ours, so nothing of it
// is touched, and no request in flight is waited for.
func (s *srv) fenced(hs *http.Server, cause error) error {
	s.holder.Store(false)
	hs.Close()
	s.o.Logf("exiting: %v", cause)
	return &Error{Op: "serve", Err: ErrFenced, Reason: cause.Error()}
}

// shutdown stops accepting requests, lets those in flight finish for a
// short while, and releases the lease if it is still ours.
func (s *srv) shutdown(hs *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.ready.Store(false)
	_ = hs.Shutdown(ctx)
	hs.Close()
	return s.release()
}

// release gives the lease up only while its token is still ours.
func (s *srv) release() error {
	s.holder.Store(false)
	if err := s.lease.Check(); err != nil {
		s.o.Logf("not releasing the lease: %v", err)
		return &Error{Op: "serve", Err: ErrFenced, Reason: err.Error()}
	}
	if err := s.lease.Release(); err != nil {
		return err
	}
	s.o.Logf("released the server lease")
	return nil
}

func (s *srv) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/live", s.handleLive)
	mux.HandleFunc("GET /api/v1/ready", s.handleReady)
	mux.Handle("POST /api/v1/shutdown", s.guard(http.HandlerFunc(s.handleShutdown)))
	mux.Handle("GET /api/v1/{$}", s.guard(s.pooled(s.handleIndex)))
	s.apiRoutes(mux)
	mux.Handle("/mcp", s.guard(s.pooled(s.mcpHandler().ServeHTTP)))
	if s.o.DebugRoutes {
		mux.Handle("GET /api/v1/debug/block", s.guard(s.pooled(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-s.stop:
			}
		})))
	}
	return s.hostGuard(mux)
}

// handleLive answers from memory only: no ledger, no git, no lock other
// than atomics, never behind the handler pool.
func (s *srv) handleLive(w http.ResponseWriter, r *http.Request) {
	l := s.live
	l.Holder = s.holder.Load()
	l.Ready = s.ready.Load()
	l.Busy = int(s.busy.Load())
	l.Waiting = int(s.waiting.Load())
	l.Reading = int(s.reading.Load())
	if n := r.URL.Query().Get("nonce"); n != "" {
		if !validNonce(n) {
			writeJSON(w, http.StatusBadRequest, errorBody("bad_nonce", "nonce: 1 to 128 letters, digits, - or _"))
			return
		}
		l.Nonce, l.HMAC = n, TokenHMAC(s.token, n)
	}
	writeJSON(w, http.StatusOK, &l)
}

func (s *srv) handleReady(w http.ResponseWriter, _ *http.Request) {
	if s.ready.Load() && s.holder.Load() {
		writeJSON(w, http.StatusOK, map[string]bool{"ready": true})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]bool{"ready": false})
}

func (s *srv) handleShutdown(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusAccepted, map[string]bool{"stopping": true})
	s.stopOnce.Do(func() { close(s.stop) })
}

// Index is the body of GET /api/v1/: the expensive route.
type Index struct {
	Repository *provider.Repository  `json:"repository"`
	Workspaces []*provider.Workspace `json:"workspaces"`
	Leases     []admission.Lease     `json:"leases"`
}

func (s *srv) handleIndex(w http.ResponseWriter, r *http.Request) {
	ws, err := s.p.List(r.Context(), provider.ListOptions{})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody("internal", err.Error()))
		return
	}
	ls, err := s.adm.List(r.Context(), admission.ListRequest{})
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody("internal", err.Error()))
		return
	}
	if ws == nil {
		ws = []*provider.Workspace{}
	}
	if ls == nil {
		ls = []admission.Lease{}
	}
	writeJSON(w, http.StatusOK, &Index{Repository: s.p.Repository(), Workspaces: ws, Leases: ls})
}

func errorBody(code, msg string) any {
	return map[string]any{"error": map[string]string{"code": code, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"encoding failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// orDefault is d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// logWriter passes net/http's own log lines to Logf.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
