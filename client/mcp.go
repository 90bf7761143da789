package client

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BridgeMCP relays MCP messages between local (stdio, for 'majlis mcp')
// and the server's MCP endpoint, until local ends or ctx does. Every
// message goes through unchanged: the tools, their schemas and their
// refusals are the server's. The endpoint is sessionless, so when the
// server cannot be reached (it was stopped or restarted) the bridge finds
// the repository's server again, as New does (starting one if the client
// was made with Start), and sends the message there; a call that still
// cannot be delivered is answered with a JSON-RPC error, so the agent is
// never left waiting.
func (c *Client) BridgeMCP(ctx context.Context, local mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lc, err := local.Connect(ctx)
	if err != nil {
		return err
	}
	defer lc.Close()
	b := &bridge{ctx: ctx, lc: lc, done: make(chan error, 1), pending: map[jsonrpc.ID]bool{}}
	b.settled = sync.NewCond(&b.pmu)
	if err := b.attach(c); err != nil {
		return err
	}
	defer b.close()

	var wg sync.WaitGroup
	go func() { // local -> server, each message on its own request
		for {
			m, err := lc.Read(ctx)
			if err != nil {
				// The client said all it had to say: answer the calls
				// under way first (echo REQUESTS | majlis mcp).
				if errors.Is(err, io.EOF) {
					b.drain()
				}
				b.finish(err)
				return
			}
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				b.pend(req.ID, true)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.forward(m)
			}()
		}
	}()
	err = <-b.done
	cancel()
	wg.Wait()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// A bridge is one relay: the local connection and the current remote one.
type bridge struct {
	ctx  context.Context
	lc   mcp.Connection
	done chan error

	wmu sync.Mutex // one writer at a time on the local side
	rmu sync.Mutex // one reconnection at a time

	pmu     sync.Mutex
	pending map[jsonrpc.ID]bool // calls not answered yet
	settled *sync.Cond          // broadcast when pending shrinks

	mu     sync.Mutex
	c      *Client
	rc     mcp.Connection
	closed []mcp.Connection
}

func (b *bridge) finish(err error) {
	select {
	case b.done <- err:
	default:
	}
}

func (b *bridge) writeLocal(m jsonrpc.Message) error {
	b.wmu.Lock()
	err := b.lc.Write(b.ctx, m)
	b.wmu.Unlock()
	if r, ok := m.(*jsonrpc.Response); ok {
		b.pend(r.ID, false)
	}
	return err
}

// pend records a call sent (on) or answered (off).
func (b *bridge) pend(id jsonrpc.ID, on bool) {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	if on {
		b.pending[id] = true
		return
	}
	delete(b.pending, id)
	b.settled.Broadcast()
}

// drain waits until every call sent has been answered (an answer that
// cannot come is answered with an error by forward), or ctx ends.
func (b *bridge) drain() {
	stop := context.AfterFunc(b.ctx, func() {
		b.pmu.Lock()
		b.settled.Broadcast()
		b.pmu.Unlock()
	})
	defer stop()
	b.pmu.Lock()
	defer b.pmu.Unlock()
	for len(b.pending) > 0 && b.ctx.Err() == nil {
		b.settled.Wait()
	}
}

// attach connects to c's MCP endpoint and relays what it answers.
func (b *bridge) attach(c *Client) error {
	rc, err := (&mcp.StreamableClientTransport{Endpoint: c.MCPEndpoint(), HTTPClient: c.hc,
		DisableStandaloneSSE: true, MaxRetries: -1}).Connect(b.ctx)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.rc != nil {
		b.closed = append(b.closed, b.rc)
	}
	b.c, b.rc = c, rc
	b.mu.Unlock()
	go func() { // server -> local
		for {
			m, err := rc.Read(b.ctx)
			if err != nil {
				return // closed, or broken: the next message reconnects
			}
			if err := b.writeLocal(m); err != nil {
				b.finish(err)
				return
			}
		}
	}()
	return nil
}

func (b *bridge) current() (*Client, mcp.Connection) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c, b.rc
}

// forward sends m to the server, finding it again once if it cannot be
// reached.
func (b *bridge) forward(m jsonrpc.Message) {
	c, rc := b.current()
	err := rc.Write(b.ctx, m)
	if err != nil && b.ctx.Err() == nil {
		if _, rerr := b.reconnect(c); rerr == nil {
			_, rc = b.current()
			err = rc.Write(b.ctx, m)
		} else {
			err = rerr
		}
	}
	if err != nil && b.ctx.Err() == nil {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			_ = b.writeLocal(&jsonrpc.Response{ID: req.ID,
				Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "majlis mcp: the repository's server could not be reached: " + err.Error()}})
		}
	}
}

// reconnect finds the repository's server again, unless another message
// already did since old was current.
func (b *bridge) reconnect(old *Client) (*Client, error) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if c, _ := b.current(); c != old {
		return c, nil
	}
	nc, err := New(b.ctx, old.opts)
	if err != nil {
		return nil, err
	}
	if err := b.attach(nc); err != nil {
		nc.Close()
		return nil, err
	}
	old.Close()
	return nc, nil
}

func (b *bridge) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rc := range b.closed {
		rc.Close()
	}
	if b.rc != nil {
		b.rc.Close()
	}
	if b.c != nil {
		b.c.Close()
	}
}
