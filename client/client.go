// Package client is the typed Go client of a majlis server's HTTP API
// (docs/MCP.md): what the CLI does, without a process per call.
//
// New finds the repository's server through its probe (the server lease
// and the liveness route), starting one when Options.Start asks, as
// 'majlis server start' does; otherwise it refuses with an error that
// says what to do. The bearer token is read from the server lease, which
// only its user can read, and is sent only on connections whose peer has
// just proven it holds it.
//
// An orchestrator's whole loop: initialize once, begin a task per agent
// (its process as owner), keep its leases alive while it works, end it,
// and take back the workspaces of agents that crashed:
//
//	client.Init(ctx, client.Options{Dir: repo}, client.InitOptions{}) // 'majlis init'; harmless when done
//	c, _ := client.New(ctx, client.Options{Dir: repo, Start: true})    // finds or starts the server
//	b, _ := c.Begin(ctx, wire.BeginRequest{Task: "T-1", Paths: []string{"src/**"}, OwnerPID: agent.Pid})
//	// the agent works in b.Workspace.Path; every minute while it runs:
//	c.Heartbeat(ctx, wire.HeartbeatRequest{Holder: "T-1", Token: b.Token})
//	c.End(ctx, wire.EndRequest{Task: "T-1", Token: b.Token}) // done: leases and workspace released
//	// an agent killed -9 never ends: its owner is dead, its workspace reclaimable
//	pv, _ := c.PreviewBulk(ctx, wire.SelectDead) // or wire.SelectReleased; show it, then:
//	c.ReclaimBulk(ctx, wire.BulkReclaimRequest{Select: wire.SelectDead, Confirm: pv.Digest}) // work kept on salvage refs
//	c.StopServer(ctx, client.StopOptions{}) // when the orchestrator is done
//
// A refusal is an *Error carrying the CLI's error code, its details and
// the exit status the CLI would have given; requests and results are the
// CLI's JSON objects, package wire's types.
//
// The client is a leaf: it imports wire, serverctl (finding, starting and
// stopping a server, itself free of the engine) and the standard library
// only, so a program that imports it compiles no git, SQLite or MCP
// library (imports_test.go holds it to that).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// Options configure New.
type Options struct {
	// Dir is any worktree of the repository; "" is the working directory.
	Dir string
	// Start starts the repository's server when none runs.
	Start bool
	// Command is the argv that runs 'majlis serve' for the repository,
	// used by Start. Nil: Binary (or the majlis found in $PATH) with
	// "serve --repo DIR".
	Command []string
	// Binary is the majlis program that Init runs and that a start runs
	// when Command is nil; "" is the majlis found in $PATH.
	Binary string
	// Version, when set, is the majlis version the server must run.
	Version string
	// StartTimeout bounds a start; zero means 15s.
	StartTimeout time.Duration
}

// A Client calls one repository's server. It is safe for concurrent use.
type Client struct {
	opts   Options
	target serverctl.Target
	conn   *serverctl.Conn
	hc     *http.Client
	base   string
	// Server is what the probe found; Started says New started it.
	Server  *serverctl.Status
	Started bool
}

// ErrNoServer is wrapped by New's error when no server runs and Start
// was not asked.
var ErrNoServer = errors.New("client: no majlis server runs for this repository")

// New connects to the server of the repository containing o.Dir.
func New(ctx context.Context, o Options) (*Client, error) {
	t, err := serverctl.Locate(o.Dir)
	if err != nil {
		return nil, err
	}
	po := serverctl.ProbeOptions{Version: o.Version}
	conn, err := serverctl.Connect(ctx, t, po)
	started := false
	if err != nil && o.Start && (errors.Is(err, serverctl.ErrNotRunning) || errors.Is(err, serverctl.ErrStaleLease) || errors.Is(err, serverctl.ErrStarting)) {
		argv, aerr := o.serveCommand()
		if aerr != nil {
			return nil, aerr
		}
		res, serr := serverctl.Start(ctx, t, serverctl.StartOptions{Command: argv, Timeout: o.StartTimeout, Probe: po})
		if serr != nil {
			return nil, serr
		}
		started = res.Started
		conn, err = serverctl.Connect(ctx, t, po)
	}
	if err != nil {
		if errors.Is(err, serverctl.ErrNotRunning) || errors.Is(err, serverctl.ErrStaleLease) {
			dir := o.Dir
			if dir == "" {
				dir = "."
			}
			return nil, fmt.Errorf("%w: start one with 'majlis server start --repo %s', or pass client.Options{Start: true}: %w", ErrNoServer, dir, err)
		}
		return nil, err
	}
	return &Client{opts: o, target: t, conn: conn, hc: conn.HTTPClient(), base: conn.BaseURL() + "/api/v1", Server: conn.Status, Started: started}, nil
}

func (o Options) serveCommand() ([]string, error) {
	dir := o.Dir
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if len(o.Command) > 0 {
		return o.Command, nil
	}
	exe, err := o.binary()
	if err != nil {
		return nil, fmt.Errorf("client: cannot start a server: %w", err)
	}
	return []string{exe, "serve", "--repo", dir}, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// HTTPClient is the client's authenticated HTTP client (for /mcp).
func (c *Client) HTTPClient() *http.Client { return c.hc }

// Options are the options the client was made with.
func (c *Client) Options() Options { return c.opts }

// Conn is the way to the server the client calls: its address, and its
// liveness check on a fresh connection (serverctl.Conn.Alive).
func (c *Client) Conn() *serverctl.Conn { return c.conn }

// MCPEndpoint is the URL of the server's MCP endpoint.
func (c *Client) MCPEndpoint() string { return c.conn.BaseURL() + "/mcp" }

// An Error is a refusal of the server: the CLI's error object and exit
// status, and the HTTP status it came with.
type Error struct {
	HTTPStatus int
	wire.Refusal
}

// Is makes a busy refusal (503, code busy) match serverctl.ErrBusy.
func (e *Error) Is(target error) bool { return target == serverctl.ErrBusy && e.Code == "busy" }

func (e *Error) Error() string {
	s := fmt.Sprintf("%s (%s, exit %d)", e.Message, e.Code, e.ExitCode)
	if h := e.Hint(); h != "" && !strings.Contains(e.Message, h) {
		s += "; " + h
	}
	return s
}

// do sends one request and decodes the result into out.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var eb struct {
			Error *wire.Refusal `json:"error"`
		}
		if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
			return fmt.Errorf("client: %s %s: %s: %.200s", method, path, resp.Status, data)
		}
		return &Error{HTTPStatus: resp.StatusCode, Refusal: *eb.Error}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("client: %s %s: decoding the result: %w", method, path, err)
	}
	return nil
}

func call[T any](c *Client, ctx context.Context, method, path string, in any) (*T, error) {
	out := new(T)
	if err := c.do(ctx, method, path, in, out); err != nil {
		return nil, err
	}
	return out, nil
}

func esc(s string) string { return url.PathEscape(s) }

// Allocate is 'majlis workspace allocate'.
func (c *Client) Allocate(ctx context.Context, r wire.AllocateRequest) (*wire.AllocateResult, error) {
	return call[wire.AllocateResult](c, ctx, "POST", "/workspaces", r)
}

// List is 'majlis workspace list'.
func (c *Client) List(ctx context.Context, all bool) ([]*wire.Workspace, error) {
	q := ""
	if all {
		q = "?all=true"
	}
	res, err := call[wire.WorkspacesResponse](c, ctx, "GET", "/workspaces"+q, nil)
	if err != nil {
		return nil, err
	}
	return res.Workspaces, nil
}

// Show is 'majlis workspace show'.
func (c *Client) Show(ctx context.Context, binding string) (*wire.Workspace, error) {
	res, err := call[wire.WorkspaceResponse](c, ctx, "GET", "/workspaces/"+esc(binding), nil)
	if err != nil {
		return nil, err
	}
	return res.Workspace, nil
}

// Salvage is 'majlis workspace salvage'.
func (c *Client) Salvage(ctx context.Context, r wire.SalvageRequest) (*wire.SalvageResult, error) {
	res, err := call[wire.SalvageResponse](c, ctx, "POST", "/workspaces/"+esc(r.Binding)+"/salvage", r)
	if err != nil {
		return nil, err
	}
	return res.Salvage, nil
}

// Release is 'majlis workspace release'.
func (c *Client) Release(ctx context.Context, r wire.ReleaseRequest) (*wire.Workspace, error) {
	res, err := call[wire.WorkspaceResponse](c, ctx, "POST", "/workspaces/"+esc(r.Binding)+"/release", r)
	if err != nil {
		return nil, err
	}
	return res.Workspace, nil
}

// PreviewReclaim is 'majlis workspace reclaim --preview'.
func (c *Client) PreviewReclaim(ctx context.Context, binding string) (*wire.Preview, error) {
	res, err := call[wire.PreviewResponse](c, ctx, "POST", "/workspaces/"+esc(binding)+"/reclaim/preview", wire.BindingRequest{Binding: binding})
	if err != nil {
		return nil, err
	}
	return res.Preview, nil
}

// Reclaim is 'majlis workspace reclaim --confirm DIGEST' (or --yes).
func (c *Client) Reclaim(ctx context.Context, r wire.ReclaimRequest) (*wire.ReclaimResult, error) {
	res, err := call[wire.ReclaimResponse](c, ctx, "POST", "/workspaces/"+esc(r.Binding)+"/reclaim", r)
	if err != nil {
		return nil, err
	}
	return res.Reclaim, nil
}

// Restore is 'majlis workspace restore'.
func (c *Client) Restore(ctx context.Context, r wire.RestoreRequest) (*wire.RestoreResponse, error) {
	return call[wire.RestoreResponse](c, ctx, "POST", "/workspaces/"+esc(r.Binding)+"/restore", r)
}

// Recover is 'majlis workspace recover'.
func (c *Client) Recover(ctx context.Context, r wire.ReleaseRequest) (*wire.RecoveredResponse, error) {
	return call[wire.RecoveredResponse](c, ctx, "POST", "/workspaces/"+esc(r.Binding)+"/recover", r)
}

// Acquire is 'majlis lease acquire'.
func (c *Client) Acquire(ctx context.Context, r wire.AcquireRequest) (*wire.AcquireResult, error) {
	return call[wire.AcquireResult](c, ctx, "POST", "/leases/acquire", r)
}

// Renew is 'majlis lease renew'.
func (c *Client) Renew(ctx context.Context, r wire.RenewRequest) (*wire.RenewResult, error) {
	return call[wire.RenewResult](c, ctx, "POST", "/leases/renew", r)
}

// ReleaseLeases is 'majlis lease release'.
func (c *Client) ReleaseLeases(ctx context.Context, r wire.LeaseReleaseRequest) (*wire.LeaseReleaseResult, error) {
	return call[wire.LeaseReleaseResult](c, ctx, "POST", "/leases/release", r)
}

// Leases is 'majlis lease list'.
func (c *Client) Leases(ctx context.Context, r wire.LeaseListRequest) ([]wire.Lease, error) {
	q := url.Values{}
	if r.Holder != "" {
		q.Set("holder", r.Holder)
	}
	if r.All {
		q.Set("all", "true")
	}
	path := "/leases"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	res, err := call[wire.LeasesResponse](c, ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	return res.Leases, nil
}

// Resolve is 'majlis lease resolve'.
func (c *Client) Resolve(ctx context.Context, r wire.ResolveRequest) (*wire.Lease, error) {
	res, err := call[wire.LeaseResponse](c, ctx, "POST", "/leases/"+esc(r.ID)+"/resolve", r)
	if err != nil {
		return nil, err
	}
	return res.Lease, nil
}

// Begin is 'majlis begin'.
func (c *Client) Begin(ctx context.Context, r wire.BeginRequest) (*wire.BeginResult, error) {
	return call[wire.BeginResult](c, ctx, "POST", "/begin", r)
}

// End releases a task's leases, then its workspace.
func (c *Client) End(ctx context.Context, r wire.EndRequest) (*wire.Ended, error) {
	res, err := call[wire.EndResponse](c, ctx, "POST", "/end", r)
	if err != nil {
		return nil, err
	}
	return res.End, nil
}

// Check is 'majlis check' in the checkout r.Checkout.
func (c *Client) Check(ctx context.Context, r wire.CheckRequest) (*wire.CheckResult, error) {
	return call[wire.CheckResult](c, ctx, "POST", "/check", r)
}

// Heartbeat asks the server to keep the holder's leases renewed while
// heartbeats keep coming (see wire.Heartbeat).
func (c *Client) Heartbeat(ctx context.Context, r wire.HeartbeatRequest) (*wire.Heartbeat, error) {
	res, err := call[wire.HeartbeatResponse](c, ctx, "POST", "/heartbeat", r)
	if err != nil {
		return nil, err
	}
	return res.Heartbeat, nil
}
