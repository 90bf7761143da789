package mcpbridge

import (
	"context"
	"io"

	"github.com/majlis-dev/majlis/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InitInput is the init tool's input.
type InitInput struct {
	WorkspaceRoot string `json:"workspace_root,omitempty" jsonschema:"where workspaces go by default (absolute); default a folder beside the main worktree named REPOSITORY.workspaces"`
}

// InitResult is the init tool's result: the registration, and what to do
// next.
type InitResult struct {
	Repository *wire.Repository `json:"repository"`
	Next       string           `json:"next"`
}

// uninitNote is what an agent is told of a repository majlis has not
// initialized.
const uninitNote = "This repository is not initialized with majlis, so none of majlis's workspace and lease tools " +
	"(begin_task, end_task, workspace_*, lease_*) are offered yet. Initialize it with the init tool (or have " +
	"the user run 'majlis init' in it), then reconnect this MCP server ('majlis mcp') to get the tools."

// nextAfterInit is what the init tool's result says to do.
const nextAfterInit = "the repository is initialized: reconnect this MCP server ('majlis mcp') to get majlis's tools " +
	"(begin_task, end_task, workspace_*, lease_*)"

// Uninitialized serves an MCP session on in and out (newline-delimited
// JSON-RPC) for a repository majlis has not initialized, instead of
// exiting, which an MCP client only sees as a closed transport: its
// instructions say what to run, and its one tool, init, registers the
// repository (initialize, as 'majlis init'). The session's tools stay
// that one: once initialized, the client reconnects to get the others.
// It runs until in ends or ctx does.
func Uninitialized(ctx context.Context, version string, initialize func(ctx context.Context, workspaceRoot string) (*wire.Repository, error),
	in io.Reader, out io.Writer) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "majlis", Version: version}, &mcp.ServerOptions{Instructions: uninitNote})
	no := false
	mcp.AddTool(srv, &mcp.Tool{Name: "init", Description: "Initialize (register) this repository with majlis, as 'majlis init' does: its state goes into the git common directory, never into a worktree; nothing in the worktree changes. Running it again reports the existing registration. " + uninitNote,
		Annotations: &mcp.ToolAnnotations{Title: "Initialize the repository", IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no}},
		func(ctx context.Context, _ *mcp.CallToolRequest, q InitInput) (*mcp.CallToolResult, *InitResult, error) {
			repo, err := initialize(ctx, q.WorkspaceRoot)
			if err != nil {
				return nil, nil, err
			}
			return nil, &InitResult{Repository: repo, Next: nextAfterInit}, nil
		})
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
