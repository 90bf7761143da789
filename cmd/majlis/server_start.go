package main

import (
	"fmt"
	"io"
	"os"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/spf13/cobra"
)

func newServerStartCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start the repository's server unless it runs",
		Long: `Start 'majlis serve' detached (its own session; output appended to
<git-common-dir>/majlis/server.log) and wait until it is ready. Starts are
serialized by a start lock held across probe, spawn and readiness, so two
starts at once give one server. A running server is left as it is ("started":
false). The lease of a server whose owner is proven dead (same machine and
boot, no process with its pid and start time) is retired at once, expired or
not, and one new server started. An unresponsive leaseholder (exit 4), or a port that answers as
someone else while the leaseholder lives (exit 3), is refused: majlis never
takes over or kills a live server implicitly.`,
		Example: `  majlis server start
  majlis server start --json | jq -r .server.address`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.startServer(cmd, false)
		},
	}
}

func (g *globalOptions) startServer(cmd *cobra.Command, attach bool) error {
	t, err := g.serverTarget(cmd.Context())
	if err != nil {
		return err
	}
	argv, err := g.serveCommand()
	if err != nil {
		return err
	}
	// argv[0] as this process got it: the binary may dispatch on it.
	o := serverctl.StartOptions{Command: argv, Name: os.Args[0], Probe: serverctl.ProbeOptions{Version: version}}
	run := serverctl.Start
	if attach {
		run = serverctl.Attach
	}
	res, err := run(cmd.Context(), t, o)
	if err != nil {
		return err
	}
	return g.emit(res, func(w io.Writer) {
		if res.Recovered != nil {
			fmt.Fprintf(w, "retired the lease of the dead server (pid %d)\n", res.Recovered.Owner.PID)
		}
		if res.Started {
			fmt.Fprint(w, "started: ")
		}
		renderStatus(w, res.Server)
	})
}
