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
// refusals are the server's. A call the server cannot be reached for is
// answered with a JSON-RPC error, so the agent is never left waiting.
func (c *Client) BridgeMCP(ctx context.Context, local mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lc, err := local.Connect(ctx)
	if err != nil {
		return err
	}
	defer lc.Close()
	rc, err := (&mcp.StreamableClientTransport{Endpoint: c.MCPEndpoint(), HTTPClient: c.hc,
		DisableStandaloneSSE: true, MaxRetries: -1}).Connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()

	var wmu sync.Mutex // one writer at a time on the local side
	writeLocal := func(m jsonrpc.Message) error {
		wmu.Lock()
		defer wmu.Unlock()
		return lc.Write(ctx, m)
	}
	done := make(chan error, 2)
	go func() { // server -> local
		for {
			m, err := rc.Read(ctx)
			if err != nil {
				done <- err
				return
			}
			if err := writeLocal(m); err != nil {
				done <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() { // local -> server, each message on its own request
		for {
			m, err := lc.Read(ctx)
			if err != nil {
				done <- err
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rc.Write(ctx, m); err != nil && ctx.Err() == nil {
					if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
						_ = writeLocal(&jsonrpc.Response{ID: req.ID,
							Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "majlis mcp: the repository's server could not be reached: " + err.Error()}})
					}
				}
			}()
		}
	}()
	err = <-done
	cancel()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
