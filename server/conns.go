package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Connections. Idle connections are closed after IdleTimeout, and a new
// one that sends no request within HeaderTimeout; open connections are
// capped (MaxConns) below the descriptor limit, so that the server's own
// files (its lease, its ledgers, git's pipes) always find a descriptor. At
// the cap the server does not stop accepting (a listener that stops makes
// the liveness probe queue and the server look unresponsive): it closes
// the oldest connection that carries no authenticated request (one idle
// or new, else one whose request has not shown the token) and accepts
// the new one.

// DefaultMaxConns bounds MaxConns when it is derived from the
// descriptor limit.
const DefaultMaxConns = 1024

// maxConns is MaxConns's default: half the descriptor limit, at most
// DefaultMaxConns, at least 8.
func maxConns() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return DefaultMaxConns
	}
	return int(max(8, min(DefaultMaxConns, rl.Cur/2)))
}

// A conn is one accepted connection as the tracker knows it.
type conn struct {
	nc     net.Conn
	seq    uint64         // accept order
	state  http.ConnState // new, active or idle
	authed bool           // its request in flight has shown the token
}

// conns is the listener that tracks and caps connections.
type conns struct {
	net.Listener
	max     int
	logf    func(string, ...any)
	mu      sync.Mutex
	seq     uint64
	m       map[net.Conn]*conn
	evicted uint64
}

func newConns(ln net.Listener, max int, logf func(string, ...any)) *conns {
	return &conns{Listener: ln, max: max, logf: logf, m: map[net.Conn]*conn{}}
}

// Accept accepts the next connection, first closing the oldest
// unauthenticated one when the cap is reached. When the process is out
// of descriptors it closes one too, so that the retry (net/http retries
// such errors) finds a descriptor.
func (cs *conns) Accept() (net.Conn, error) {
	nc, err := cs.Listener.Accept()
	if err != nil {
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			cs.mu.Lock()
			victim := cs.victim()
			cs.mu.Unlock()
			cs.close(victim, "the process is out of descriptors")
		}
		return nil, err
	}
	cs.mu.Lock()
	var victim *conn
	if len(cs.m) >= cs.max {
		victim = cs.victim()
	}
	cs.seq++
	cs.m[nc] = &conn{nc: nc, seq: cs.seq, state: http.StateNew}
	cs.mu.Unlock()
	cs.close(victim, "the connection cap is reached")
	return nc, nil
}

// victim picks the connection to close: the oldest idle or new one, else
// the oldest whose request has not shown the token; nil when every open
// connection carries an authenticated request.
func (cs *conns) victim() *conn {
	var quiet, unauthed *conn
	for _, c := range cs.m {
		switch {
		case c.state != http.StateActive:
			if quiet == nil || c.seq < quiet.seq {
				quiet = c
			}
		case !c.authed:
			if unauthed == nil || c.seq < unauthed.seq {
				unauthed = c
			}
		}
	}
	if quiet != nil {
		return quiet
	}
	return unauthed
}

func (cs *conns) close(c *conn, why string) {
	if c == nil {
		return
	}
	c.nc.Close()
	cs.mu.Lock()
	delete(cs.m, c.nc)
	cs.evicted++
	n := cs.evicted
	cs.mu.Unlock()
	if n&(n-1) == 0 { // the 1st, 2nd, 4th, 8th...: a flood logs a few lines
		cs.logf("closed the oldest unauthenticated connection: %s (%d closed so far)", why, n)
	}
}

// connState is http.Server's ConnState hook.
func (cs *conns) connState(nc net.Conn, st http.ConnState) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.m[nc]
	if c == nil {
		return
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(cs.m, nc)
	case http.StateIdle:
		c.state, c.authed = st, false
	default:
		c.state = st
	}
}

// open is the number of tracked connections.
func (cs *conns) open() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}

type connKey struct{}

// connContext is http.Server's ConnContext hook: it lets the guard mark
// the request's connection as authenticated.
func (cs *conns) connContext(ctx context.Context, nc net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connRef{cs: cs, nc: nc})
}

type connRef struct {
	cs *conns
	nc net.Conn
}

// authenticated marks r's connection as carrying a request that showed
// the token, until that request ends: the cap closes it last.
func authenticated(r *http.Request) {
	ref, _ := r.Context().Value(connKey{}).(*connRef)
	if ref == nil {
		return
	}
	ref.cs.mu.Lock()
	if c := ref.cs.m[ref.nc]; c != nil {
		c.authed = true
	}
	ref.cs.mu.Unlock()
}
