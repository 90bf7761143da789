package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// An mcpCall is a JSON-RPC call of the local side under way: where it was
// sent, and whether its request reached the server, so that an answer the
// bridge gives in the server's place says whether it may have taken
// effect.
type mcpCall struct {
	id        jsonrpc.ID
	requestID string // the request_id argument of a tool call, if any

	answered bool // under the bridge's pmu: its answer is being written

	mu      sync.Mutex
	conn    *serverctl.Conn // the server it was sent to; nil while none is
	cancel  context.CancelFunc
	wrote   bool   // its HTTP request was written whole to a connection
	refusal string // the code of a 503 answer: busy or stopping
}

type callKey struct{}

func (cl *mcpCall) start(cancel context.CancelFunc) {
	cl.mu.Lock()
	cl.cancel = cancel
	cl.mu.Unlock()
}

func (cl *mcpCall) sentTo(c *serverctl.Conn) {
	if cl == nil {
		return
	}
	cl.mu.Lock()
	cl.conn = c
	cl.mu.Unlock()
}

// reached reports whether the call's request reached a server, or was
// answered 503 (then nothing of it ran, and it is not sent again).
func (cl *mcpCall) reached() bool {
	if cl == nil {
		return true
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.wrote || cl.refusal != ""
}

// requestIDOf is the request_id argument of a tools/call, or "".
func requestIDOf(req *jsonrpc.Request) string {
	if req.Method != "tools/call" {
		return ""
	}
	var p struct {
		Arguments struct {
			RequestID string `json:"request_id"`
		} `json:"arguments"`
	}
	_ = json.Unmarshal(req.Params, &p)
	return p.Arguments.RequestID
}

// tapClient watches the HTTP requests of calls: whether each was written
// whole to a connection, and the code of a 503 answer.
type tapClient struct{ next http.RoundTripper }

func (t *tapClient) client() *http.Client { return &http.Client{Transport: t} }

func (t *tapClient) RoundTrip(r *http.Request) (*http.Response, error) {
	cl, _ := r.Context().Value(callKey{}).(*mcpCall)
	if cl == nil {
		return t.next.RoundTrip(r)
	}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				cl.mu.Lock()
				cl.wrote = true
				cl.mu.Unlock()
			}
		},
	}))
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		return resp, err
	}
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var body struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if rerr == nil && json.Unmarshal(data, &body) == nil && (body.Error.Code == "busy" || body.Error.Code == "stopping") {
		cl.mu.Lock()
		cl.refusal, cl.wrote = body.Error.Code, false // answered before anything of it ran
		cl.mu.Unlock()
	}
	return resp, nil
}

// fail answers a call that could not be delivered, or whose delivery
// broke, in the server's place.
func (b *bridge) fail(cl *mcpCall, err error) {
	cl.mu.Lock()
	wrote, refusal := cl.wrote, cl.refusal
	cl.mu.Unlock()
	var msg string
	switch {
	case refusal == "busy":
		msg = "majlis mcp: the server is busy (every handler stayed taken): nothing of this call ran; retry it in a moment"
	case refusal == "stopping":
		msg = "majlis mcp: the server is stopping: nothing of this call ran; retry it in a moment"
	case !wrote:
		msg = "majlis mcp: the repository's server could not be reached: " + clip(err.Error()) + "; nothing of this call ran; retry it"
	default:
		msg = "majlis mcp: the connection to the server broke before it answered (" + clip(err.Error()) + "): the call may have taken effect. " + retryAdvice(cl)
	}
	b.answer(cl, msg, wrote && refusal == "")
}

// answer settles cl with an error of the bridge, unless the server's
// answer came first.
func (b *bridge) answer(cl *mcpCall, msg string, mayHaveTakenEffect bool) {
	data, _ := json.Marshal(map[string]any{"may_have_taken_effect": mayHaveTakenEffect, "request_id": cl.requestID})
	m, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: cl.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}})
	if err == nil {
		err = b.settle(cl.id, func() error { return b.emit(m) })
	}
	if err != nil {
		b.finish(err)
	}
}

func retryAdvice(cl *mcpCall) string {
	if cl.requestID != "" {
		return fmt.Sprintf("Retry it with the same request_id (%s) once the server answers ('majlis server status'): a call that finished returns its recorded result, one that did not resumes", cl.requestID)
	}
	return "It had no request_id: look at what it would have changed (workspace_list, lease_list) before retrying, and give calls a request_id so that a retry is safe"
}

// watch gives up the calls under way on a server that has not answered
// its liveness route for b.after, checking every quarter of it while
// calls are under way. A slow call on a server that answers is never
// given up.
func (b *bridge) watch() {
	every := max(b.after/4, 5*time.Millisecond)
	timeout := min(max(b.after/2, 5*time.Millisecond), time.Second)
	lastOK := map[*serverctl.Conn]time.Time{}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		conns := b.pendingConns()
		for c := range lastOK {
			if !conns[c] {
				delete(lastOK, c)
			}
		}
		for c := range conns {
			now := time.Now()
			if _, ok := lastOK[c]; !ok {
				lastOK[c] = now
			}
			err := c.Alive(b.ctx, timeout)
			if err == nil {
				lastOK[c] = time.Now()
				continue
			}
			if silent := time.Since(lastOK[c]); silent >= b.after {
				b.giveUp(c, silent, err)
				delete(lastOK, c)
			}
		}
		t.Reset(every)
	}
}

// pendingConns are the servers that calls under way were sent to.
func (b *bridge) pendingConns() map[*serverctl.Conn]bool {
	b.pmu.Lock()
	defer b.pmu.Unlock()
	out := map[*serverctl.Conn]bool{}
	for _, cl := range b.pending {
		cl.mu.Lock()
		if cl.conn != nil && !cl.answered {
			out[cl.conn] = true
		}
		cl.mu.Unlock()
	}
	return out
}

// giveUp answers the calls under way on c, which stopped answering its
// liveness route, and abandons their requests.
func (b *bridge) giveUp(c *serverctl.Conn, silent time.Duration, why error) {
	b.pmu.Lock()
	var calls []*mcpCall
	for _, cl := range b.pending {
		cl.mu.Lock()
		if cl.conn == c {
			calls = append(calls, cl)
		}
		cl.mu.Unlock()
	}
	b.pmu.Unlock()
	for _, cl := range calls {
		cl.mu.Lock()
		wrote, cancel := cl.wrote && cl.refusal == "", cl.cancel
		cl.mu.Unlock()
		head := fmt.Sprintf("majlis mcp: the repository's server (pid %d) has not answered its liveness route for %s (%s)",
			c.Status.PID, silent.Round(time.Millisecond), clip(why.Error()))
		if wrote {
			b.answer(cl, head+" while this call ran: it may have taken effect. "+retryAdvice(cl), true)
		} else {
			b.answer(cl, head+" before this call reached it: nothing of it ran; retry it once the server answers ('majlis server status')", false)
		}
		if cancel != nil {
			cancel()
		}
	}
}
