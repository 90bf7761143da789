// Package mcpbridge is the stdio transport of 'majlis mcp': it relays an MCP
// client's messages to the repository's server and back, and answers the
// calls under way itself when that server stops answering. It lives beside
// the command so that package client compiles no MCP library.
package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/client"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure Run.
type Options struct {
	// UnresponsiveAfter is how long Run waits for a server that stopped
	// answering its liveness route before it answers the calls under way
	// there itself; zero means DefaultUnresponsiveAfter.
	UnresponsiveAfter time.Duration
}

// Run relays MCP messages between in and out (newline-delimited
// JSON-RPC, the stdio transport of 'majlis mcp') and the server's MCP
// endpoint, until in ends (after the calls under way are answered) or ctx
// does. Every message goes through unchanged: the tools, their schemas and
// their refusals are the server's. The bridge answers by itself only:
//
//   - a line that is not JSON: -32700 (parse error), and it goes on;
//     valid JSON that is not a JSON-RPC message (a batch included): -32600;
//   - a call it could not deliver: the endpoint is sessionless, so when
//     the server cannot be reached (stopped, restarted) the bridge finds
//     the repository's server again, as client.New does (starting one if the
//     client was made with Start), and sends the call there; if that
//     fails too, or the server answered busy, it answers -32603 saying
//     that nothing of the call ran;
//   - a call under way on a server that stops answering its liveness
//     route for Options.UnresponsiveAfter (never merely because the call
//     is slow: a reclaim may take minutes while liveness answers): -32603
//     saying whether the call may have taken effect (it reached the
//     server) and that a retry with the same request_id returns its
//     result or finishes it.
//
// So an agent is never left waiting for an answer.
func Run(ctx context.Context, c *client.Client, o Options, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &bridge{ctx: ctx, out: out, done: make(chan error, 1), pending: map[jsonrpc.ID]*mcpCall{},
		after: orDefault(o.UnresponsiveAfter, DefaultUnresponsiveAfter)}
	b.settled = sync.NewCond(&b.pmu)
	if err := b.attach(c); err != nil {
		return err
	}
	defer b.close()
	go b.watch()

	var wg sync.WaitGroup
	go func() { // local -> server, each message on its own request
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, maxLine)
			if len(bytes.TrimSpace(line)) > 0 || errors.Is(err, errLineTooLong) {
				if m, cl := b.local(line, errors.Is(err, errLineTooLong)); m != nil {
					wg.Add(1)
					go func() {
						defer wg.Done()
						b.forward(m, cl)
					}()
				}
			}
			if err != nil && !errors.Is(err, errLineTooLong) {
				// The client said all it had to say: answer the calls
				// under way first (echo REQUESTS | majlis mcp).
				if errors.Is(err, io.EOF) {
					b.drain()
				}
				b.finish(err)
				return
			}
		}
	}()
	err := <-b.done
	cancel()
	wg.Wait()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// DefaultUnresponsiveAfter is Options.UnresponsiveAfter's default.
const DefaultUnresponsiveAfter = 3 * time.Second

// maxLine bounds a message from the local side: the server takes no
// larger request body.
const maxLine = 1 << 20

// A bridge is one relay: the local side and the current remote one.
type bridge struct {
	ctx   context.Context
	out   io.Writer
	done  chan error
	after time.Duration

	wmu sync.Mutex // one writer at a time on the local side
	rmu sync.Mutex // one reconnection at a time

	pmu     sync.Mutex
	pending map[jsonrpc.ID]*mcpCall // calls not answered yet
	settled *sync.Cond              // broadcast when pending shrinks

	mu     sync.Mutex
	c      *client.Client
	rc     mcp.Connection
	closed []mcp.Connection
}

func (b *bridge) finish(err error) {
	select {
	case b.done <- err:
	default:
	}
}

// emit writes one line to the local side.
func (b *bridge) emit(data []byte) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_, err := b.out.Write(append(data, '\n'))
	return err
}

// local decodes one line from the local side. A line that is no JSON-RPC
// message is answered at once and yields nil; a call is recorded as
// pending.
func (b *bridge) local(line []byte, tooLong bool) (jsonrpc.Message, *mcpCall) {
	if tooLong {
		b.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("majlis mcp: a message longer than %d bytes was skipped", maxLine))
		return nil, nil
	}
	m, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		if !json.Valid(line) {
			b.reject(nil, jsonrpc.CodeParseError, "majlis mcp: parse error: the line is not JSON: "+clip(err.Error()))
			return nil, nil
		}
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		b.reject(probe.ID, jsonrpc.CodeInvalidRequest, "majlis mcp: not a JSON-RPC 2.0 request, notification or response (batches are not supported): "+clip(err.Error()))
		return nil, nil
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return m, nil
	}
	cl := &mcpCall{id: req.ID, requestID: requestIDOf(req)}
	b.pmu.Lock()
	b.pending[req.ID] = cl
	b.pmu.Unlock()
	return m, cl
}

// reject answers a message the bridge cannot relay; id is its raw id, or
// nil for null.
func (b *bridge) reject(id json.RawMessage, code int64, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	if err := b.emit(data); err != nil {
		b.finish(err)
	}
}

// settle answers the call id with write, unless it was answered
// already: only its first answer (the server's, or the bridge's own) is
// written. The call stays pending until the answer is written, so that
// drain never lets the bridge end before it.
func (b *bridge) settle(id jsonrpc.ID, write func() error) error {
	b.pmu.Lock()
	cl, ok := b.pending[id]
	if ok && cl.answered {
		ok = false
	}
	if ok {
		cl.answered = true
	}
	b.pmu.Unlock()
	if !ok {
		return nil
	}
	err := write()
	b.pmu.Lock()
	delete(b.pending, id)
	b.settled.Broadcast()
	b.pmu.Unlock()
	cl.mu.Lock()
	cancel := cl.cancel
	cl.mu.Unlock()
	if cancel != nil {
		cancel() // its request and answer are done with
	}
	return err
}

// relay writes a message of the server to the local side, unless it
// answers a call the bridge already answered.
func (b *bridge) relay(m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	if r, ok := m.(*jsonrpc.Response); ok {
		return b.settle(r.ID, func() error { return b.emit(data) })
	}
	return b.emit(data)
}

// drain waits until every call sent has been answered (an answer that
// cannot come is given by the bridge), or ctx ends.
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
func (b *bridge) attach(c *client.Client) error {
	hc := &tapClient{next: c.HTTPClient().Transport}
	rc, err := (&mcp.StreamableClientTransport{Endpoint: c.MCPEndpoint(), HTTPClient: hc.client(),
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
			if err := b.relay(m); err != nil {
				b.finish(err)
				return
			}
		}
	}()
	return nil
}

func (b *bridge) current() (*client.Client, mcp.Connection) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c, b.rc
}

// forward sends m to the server. A call that did not reach it is sent
// again to the repository's server, found again; one that still fails is
// answered by the bridge.
func (b *bridge) forward(m jsonrpc.Message, cl *mcpCall) {
	ctx := b.ctx
	if cl != nil {
		// Cancelled once the call is settled, not before: the SDK reads
		// the answer's body after Write returns.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(context.WithValue(b.ctx, callKey{}, cl))
		cl.start(cancel)
	}
	c, rc := b.current()
	cl.sentTo(c.Conn())
	err := rc.Write(ctx, m)
	if err != nil && ctx.Err() == nil && !cl.reached() {
		cl.sentTo(nil) // not judged while the server is found again
		if _, rerr := b.reconnect(c); rerr == nil {
			c, rc = b.current()
			cl.sentTo(c.Conn())
			err = rc.Write(ctx, m)
		} else {
			err = rerr
		}
	}
	if err != nil && ctx.Err() == nil && cl != nil {
		b.fail(cl, err)
	}
}

// reconnect finds the repository's server again, unless another message
// already did since old was current.
func (b *bridge) reconnect(old *client.Client) (*client.Client, error) {
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if c, _ := b.current(); c != old {
		return c, nil
	}
	nc, err := client.New(b.ctx, old.Options())
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

// clip shortens an error echoed to the local side.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// errLineTooLong: a line longer than the limit, skipped whole.
var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes; a longer one is read to
// its end and skipped (errLineTooLong).
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	long := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			line = append(line, chunk...)
			if len(line) > max+1 {
				long, line = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if long && err == nil {
			return nil, errLineTooLong
		}
		return line, err
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
