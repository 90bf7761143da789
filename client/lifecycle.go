package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/majlis-dev/majlis/wire"
)

// binary is the majlis program to run: Options.Binary, or the one in $PATH.
func (o Options) binary() (string, error) {
	if o.Binary != "" {
		return o.Binary, nil
	}
	exe, err := exec.LookPath("majlis")
	if err != nil {
		return "", fmt.Errorf("no majlis in $PATH (%v); install it, or set Options.Binary", err)
	}
	return exe, nil
}

// InitOptions configure Init.
type InitOptions struct {
	// WorkspaceRoot is where workspaces go by default; "" is a folder
	// beside the main worktree named <repository>.workspaces.
	WorkspaceRoot string
}

// Init registers the repository containing o.Dir with majlis, by running
// 'majlis init' (Options.Binary, or the majlis in $PATH) as a child
// process, as New starts a server: the client compiles no engine. Running
// it on a registered repository reports the registration. A refusal is an
// *Error with the command's code, details and exit status.
func Init(ctx context.Context, o Options, opts InitOptions) (*wire.Repository, error) {
	exe, err := o.binary()
	if err != nil {
		return nil, fmt.Errorf("client: cannot initialize: %w", err)
	}
	dir := o.Dir
	if dir == "" {
		dir = "."
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	args := []string{"--repo", dir, "init", "--json"}
	if opts.WorkspaceRoot != "" {
		args = append(args, "--workspace-root", opts.WorkspaceRoot)
	}
	var res struct {
		Repository *wire.Repository `json:"repository"`
	}
	if err := runJSON(ctx, exe, args, &res); err != nil {
		return nil, err
	}
	if res.Repository == nil {
		return nil, fmt.Errorf("client: %s init printed no repository", exe)
	}
	return res.Repository, nil
}

// runJSON runs exe with args (which ask for --json) and decodes its
// result into out; a failure is the *Error the command printed.
func runJSON(ctx context.Context, exe string, args []string, out any) error {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var ee *exec.ExitError
	if runErr != nil && !errors.As(runErr, &ee) {
		return fmt.Errorf("client: running %s %s: %w", exe, strings.Join(args, " "), runErr)
	}
	if runErr != nil {
		var eb struct {
			Error *wire.Refusal `json:"error"`
		}
		if json.Unmarshal(stdout.Bytes(), &eb) != nil || eb.Error == nil {
			return fmt.Errorf("client: %s %s: %v: %.500s", exe, strings.Join(args, " "), runErr, strings.TrimSpace(stderr.String()))
		}
		eb.Error.ExitCode = wire.ExitCode(ee.ExitCode())
		return &Error{Refusal: *eb.Error}
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("client: %s %s: decoding its result: %w", exe, strings.Join(args, " "), err)
	}
	return nil
}

// StopOptions configure StopServer.
type StopOptions = serverctl.StopOptions

// StopServer stops the repository's server, as 'majlis server stop' does:
// by an authenticated shutdown request, after which the server lets the
// calls under way end and releases its lease; with Force, an
// unresponsive server is signalled (TERM, then KILL), only once its pid
// and start time are verified. The client is of no more use afterwards
// (a later New starts or finds a server again).
func (c *Client) StopServer(ctx context.Context, o StopOptions) (*serverctl.StopResult, error) {
	if o.Probe.Version == "" {
		o.Probe.Version = c.opts.Version
	}
	res, err := serverctl.Stop(ctx, c.target, o)
	c.hc.CloseIdleConnections()
	return res, err
}
