package serverctl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/majlis-dev/majlis/reservation"
)

// A Conn is the way to a running server that a probe found to be the
// leaseholder: its address and the bearer token of its API.
type Conn struct {
	Status *Status
	rec    *reservation.Record
	repo   string
}

// Connect probes the repository's server and returns a Conn when it is
// running. Any other state is an *Error wrapping that state's sentinel
// (ErrNotRunning, ErrStarting, ErrUnresponsive, ...), with a hint.
func Connect(ctx context.Context, t Target, o ProbeOptions) (*Conn, error) {
	leases, err := OpenLeases(t.StateDir)
	if err != nil {
		return nil, err
	}
	defer leases.Close()
	st, rec, err := probe(ctx, leases, t, o)
	if err != nil {
		return nil, err
	}
	if st.State != Running {
		return nil, stateError("connect", st)
	}
	return &Conn{Status: st, rec: rec, repo: t.Repository}, nil
}

// stateError is the refusal of a probe's state other than running.
func stateError(op string, st *Status) error {
	e := &Error{Op: op, Status: st, Reason: st.Reason}
	switch st.State {
	case NotRunning, StaleLease:
		e.Err, e.Hint = ErrNotRunning, "start it with 'majlis server start' (or let the client start it)"
		if st.State == StaleLease {
			e.Err = ErrStaleLease
		}
	case Starting:
		e.Err, e.Hint = ErrStarting, "retry in a moment"
	case Unresponsive:
		e.Err, e.Hint = ErrUnresponsive, fmt.Sprintf("wait, or check pid %d and run 'majlis server stop --force'", st.PID)
	case Foreign:
		e.Err, e.Hint = ErrForeign, "'majlis server status' says what was found"
	case VersionMismatch:
		e.Err, e.Hint = ErrVersionMismatch, "stop it ('majlis server stop') to start this version"
	default:
		e.Err = ErrInvalid
	}
	return e
}

// Token is the bearer token of the server's API.
func (c *Conn) Token() string { return c.rec.Token }

// HTTPClient returns a client for the server's API that sends the bearer
// token only on connections whose peer has just proven, on that very
// connection, that it holds the token (the liveness route's HMAC of a
// fresh nonce): a process that took the port after the server died never
// receives it.
func (c *Conn) HTTPClient() *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != c.Status.Address {
				return nil, fmt.Errorf("server: refusing to connect to %s, not the server's %s", addr, c.Status.Address)
			}
			lc, err := dialProven(ctx, addr, ConnectTimeout, c.rec, c.repo)
			if err != nil {
				return nil, err
			}
			if lc.br.Buffered() > 0 {
				lc.Close()
				return nil, &Error{Op: "connect", Err: ErrForeign, Reason: "the liveness answer was followed by unasked bytes"}
			}
			if err := lc.SetDeadline(time.Time{}); err != nil {
				lc.Close()
				return nil, err
			}
			return lc.Conn, nil
		},
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{Transport: &bearerTransport{token: c.rec.Token, next: tr}}
}

// bearerTransport adds the Authorization header.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// BaseURL is http://ADDRESS, the prefix of every route.
func (c *Conn) BaseURL() string { return "http://" + c.Status.Address }

// Alive asks the server's liveness route, on a fresh connection with a
// fresh nonce, whether the leaseholder still answers as itself; it
// returns nil when it does, within timeout.
func (c *Conn) Alive(ctx context.Context, timeout time.Duration) error {
	lc, err := dialProven(ctx, c.Status.Address, timeout, c.rec, c.repo)
	if err != nil {
		return err
	}
	return lc.Close()
}

// ConnectTimeout bounds the connection to a server and its liveness
// check, before an API request is sent on it.
const ConnectTimeout = 5 * time.Second

// dialProven dials addr and asks its liveness route on that connection,
// which it returns only once the answer proves that the peer holds rec's
// token (an *Error wrapping ErrForeign otherwise): only then may the
// token be sent on it.
func dialProven(ctx context.Context, addr string, timeout time.Duration, rec *reservation.Record, repo string) (*liveConn, error) {
	lc, err := dialLive(ctx, addr, timeout)
	if err != nil {
		return nil, err
	}
	a, err := lc.live()
	if err == nil {
		if why := compare(a.body, rec, repo, a.nonce); why != "" {
			err = &Error{Op: "connect", Err: ErrForeign, Reason: why + "; the token was not sent"}
		}
	}
	if err != nil {
		lc.Close()
		return nil, err
	}
	return lc, nil
}
