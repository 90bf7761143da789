package main

import (
	"io"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/spf13/cobra"
)

func newServerStatusCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Probe the repository's server",
		Long: `Read the server lease and ask the liveness route at the address it records,
with a fresh nonce, whether the leaseholder answers there. It changes nothing.
It exits 0 only when the server is running; every other state has its exit
status and code (see 'majlis server --help'); with --json the error's details
carry the probe's findings under "server".`,
		Example: `  majlis server status
  majlis server status --json | jq -r '.server.address // .error.details.server.status'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := g.serverTarget(cmd.Context())
			if err != nil {
				return err
			}
			st, err := serverctl.Probe(cmd.Context(), t, serverctl.ProbeOptions{Version: version})
			if err != nil {
				return err
			}
			if err := statusError(st); err != nil {
				return err
			}
			return g.emit(serverJSON{Server: st}, func(w io.Writer) { renderStatus(w, st) })
		},
	}
}
