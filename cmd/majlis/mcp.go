package main

import (
	"os"

	"github.com/majlis-dev/majlis/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

func newMCPCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve majlis's MCP tools to an agent on stdin and stdout",
		Long: `Serve the MCP tools of the repository's server (begin_task, end_task,
workspace_*, lease_*, check_edits, heartbeat) over stdio, for MCP clients that
start a command: it attaches to the repository's server, starting one when
none runs (as 'majlis server start'), and relays every message to the
server's /mcp endpoint unchanged. The tools, their schemas and their
refusals are the server's; see docs/MCP.md for them and for how to register
majlis with an MCP client.

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
			c, err := client.New(cmd.Context(), client.Options{Dir: g.Repo, Start: true, Command: argv, Version: version})
			if err != nil {
				return err
			}
			defer c.Close()
			return c.BridgeMCP(cmd.Context(), &mcp.IOTransport{Reader: os.Stdin, Writer: nopCloser{os.Stdout}})
		},
	}
}

// nopCloser keeps stdout open when the bridge closes its side.
type nopCloser struct{ *os.File }

func (nopCloser) Close() error { return nil }
