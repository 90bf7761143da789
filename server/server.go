package server

import (
	"context"
	"encoding/json"
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
	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// Serve runs the repository's server in the calling process until ctx
// ends, an authenticated shutdown arrives, or the server lease stops being
// its own (then it returns an error wrapping ErrFenced at once, without
// touching the lease). Another live server refuses with reservation.ErrHeld.
func Serve(ctx context.Context, o Options) error {
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	p, err := provider.Open(ctx, o.Dir, o.Provider)
	if err != nil {
		return err
	}
	defer p.Close()
	leases, err := serverctl.OpenLeases(p.StateDir())
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
		Resource: serverctl.Resource, Purpose: serverctl.Purpose, TTL: o.LeaseTTL,
		Metadata: serverctl.LeaseMetadata(id, addr, o.Version),
	})
	if err != nil {
		return err
	}
	rec := lease.Record()
	s := &srv{
		o: o, p: p, lease: lease, addr: addr, token: rec.Token,
		sem:  make(chan struct{}, o.MaxHandlers),
		stop: make(chan struct{}),
		live: wire.Live{Repository: id, PID: rec.Owner.PID, StartTime: rec.Owner.StartTime, TokenSHA256: wire.TokenDigest(rec.Token),
			Version: o.Version, API: wire.APIVersion, MaxHandlers: o.MaxHandlers, MaxConnections: o.MaxConns},
	}
	s.work, s.stopWork = context.WithCancel(context.WithoutCancel(ctx))
	defer s.stopWork()
	s.holder.Store(true)
	o.Logf("server for repository %s listening on %s (pid %d, lease generation %d)", id, addr, rec.Owner.PID, rec.Generation)

	s.conns = newConns(ln, o.MaxConns, o.Logf)
	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: o.HeaderTimeout, IdleTimeout: o.IdleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ConnState: s.conns.connState, ConnContext: s.conns.connContext,
		ErrorLog: log.New(logWriter(o.Logf), "", 0)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(s.conns) }()

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
	// The heartbeat loop ends before the admission service closes.
	beaten := make(chan struct{})
	go func() { defer close(beaten); s.beats.run(bctx, o.HeartbeatTick) }()
	defer func() { bcancel(); <-beaten }()
	// The background purge stops before the provider closes.
	purged := make(chan struct{})
	go func() { defer close(purged); s.purgeLoop(bctx, o.PurgeInterval) }()
	defer func() { bcancel(); <-purged }()
	// So does the background fill of the warm pool.
	pooled := make(chan struct{})
	go func() { defer close(pooled); s.poolLoop(bctx, o.PoolInterval) }()
	defer func() { bcancel(); <-pooled }()
	s.ready.Store(true)
	if o.Ready != nil {
		o.Ready(addr)
	}

	return s.run(ctx, hs, serveErr)
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

	live   wire.Live // fixed part of the liveness answer
	holder atomic.Bool
	ready  atomic.Bool
	busy   atomic.Int64 // requests holding a handler
	sem    chan struct{}

	waiting atomic.Int64 // requests waiting for a handler
	reading atomic.Int64 // requests whose body is being read
	conns   *conns       // nil in tests that serve the routes in process

	// work is the context of every pooled handler's work: a stop cancels
	// it, so that a reclaim stops at its next safe point, and waits for
	// the handlers (inflight) before it releases the lease.
	work     context.Context
	stopWork context.CancelFunc
	lifeMu   sync.Mutex // orders enter against shutdown's Wait
	stopping atomic.Bool
	inflight sync.WaitGroup

	leaseTrouble atomic.Int64 // lease checks in a row that could not read it

	stopOnce sync.Once
	stop     chan struct{}
}

func (s *srv) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.LivePath, s.handleLive)
	mux.HandleFunc("GET "+wire.ReadyPath, s.handleReady)
	mux.Handle("POST "+wire.ShutdownPath, s.guard(http.HandlerFunc(s.handleShutdown)))
	mux.Handle("GET /api/v1/{$}", s.guard(s.pooled(s.handleIndex)))
	s.apiRoutes(mux)
	mux.Handle(wire.MCPPath, s.guard(s.pooled(s.mcpHandler().ServeHTTP)))
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
	if s.conns != nil {
		l.Connections = s.conns.open()
	}
	if n := r.URL.Query().Get("nonce"); n != "" {
		if !validNonce(n) {
			writeJSON(w, http.StatusBadRequest, errorBody("bad_nonce", "nonce: 1 to 128 letters, digits, - or _"))
			return
		}
		l.Nonce, l.HMAC = n, wire.TokenHMAC(s.token, n)
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

// logWriter passes net/http's own log lines to Logf.
type logWriter func(format string, args ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
