package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/majlis-dev/majlis/client"
	"github.com/majlis-dev/majlis/cmd/majlis/internal/mcpbridge"
	"github.com/majlis-dev/majlis/internal/registration"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
	"github.com/spf13/cobra"
)

func newMCPCmd(g *globalOptions) *cobra.Command {
	var after time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve majlis's MCP tools to an agent on stdin and stdout",
		Long: `Serve the MCP tools of the repository's server (begin_task, end_task,
workspace_*, lease_*, check_edits, heartbeat) over stdio, for MCP clients that
start a command: it attaches to the repository's server, starting one when
none runs (as 'majlis server start'), and relays every message to the
server's /mcp endpoint unchanged. The tools, their schemas and their
refusals are the server's; see docs/MCP.md for them and for how to register
majlis with an MCP client.

A line that is not JSON is answered with a parse error (-32700) and the
bridge goes on. A call is never left unanswered: one that cannot be
delivered, or that runs on a server that stops answering its liveness route
for --unresponsive-after, is answered with a JSON-RPC error (-32603) that
says whether it may have taken effect; a slow call on a server that answers
(a long reclaim) is waited for.

In a repository majlis has not initialized, the session offers one tool,
init (as 'majlis init'), and its instructions say so: once initialized,
reconnect to get the others.

It runs until stdin ends. The server keeps running afterwards, for the next
agent; 'majlis server stop' stops it.`,
		Example: `  majlis mcp --repo ~/src/app
  claude mcp add majlis -- majlis mcp --repo ~/src/app`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			argv, err := g.serveCommand()
			if err != nil {
				return err
			}
			if after <= 0 {
				return &usageError{fmt.Errorf("--unresponsive-after %v is not a positive duration", after)}
			}
			c, err := client.New(cmd.Context(), client.Options{Dir: g.Repo, Start: true, Command: argv, Version: version})
			if errors.Is(err, registration.ErrNotInitialized) {
				// An MCP client sees an exit only as a closed transport:
				// the session says what to run, and offers init.
				initialize := func(ctx context.Context, root string) (*wire.Repository, error) {
					return provider.Init(ctx, g.Repo, provider.InitOptions{WorkspaceRoot: root})
				}
				return mcpbridge.Uninitialized(cmd.Context(), version, initialize, os.Stdin, os.Stdout)
			}
			if err != nil {
				return err
			}
			defer c.Close()
			return mcpbridge.Run(cmd.Context(), c, mcpbridge.Options{UnresponsiveAfter: after}, os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().DurationVar(&after, "unresponsive-after", mcpbridge.DefaultUnresponsiveAfter,
		"answer a call under way once the server has not answered its liveness route for this long")
	return cmd
}
