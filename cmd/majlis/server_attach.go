package main

import "github.com/spf13/cobra"

func newServerAttachCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "attach",
		Short: "Find the running server, or start one",
		Long: `Probe the repository's server and print where it runs; when none runs, start
it as 'majlis server start' does. A running server costs one liveness request
(no start lock). A busy server still answers its liveness route and is
attached to, never replaced.`,
		Example: `  majlis server attach
  addr=$(majlis server attach --json | jq -r .server.address)`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.startServer(cmd, true)
		},
	}
}
