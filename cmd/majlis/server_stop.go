package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/majlis-dev/majlis/serverctl"
	"github.com/spf13/cobra"
)

func newServerStopCmd(g *globalOptions) *cobra.Command {
	var opts serverctl.StopOptions
	cmd := &cobra.Command{
		Use:   "stop [--force]",
		Short: "Stop the repository's server",
		Long: `Ask the server to shut down, authenticated with the bearer token of its lease
(readable by its owner only), and wait until it has exited and released its
lease. Nothing running is not an error ("stopped": false).

An unresponsive leaseholder (exit 4) or a port answering as someone else
(exit 3) is refused. --force then sends SIGTERM and, after --grace, SIGKILL,
to the leaseholder, only after verifying its pid and process start time,
through a pidfd: a process that merely reuses the pid is never signalled.`,
		Example: `  majlis server stop
  majlis server stop --force --grace 2s --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := g.serverTarget(cmd.Context())
			if err != nil {
				return err
			}
			opts.Probe.Version = version
			res, err := serverctl.Stop(cmd.Context(), t, opts)
			if err != nil {
				return err
			}
			return g.emit(res, func(w io.Writer) {
				switch {
				case !res.Stopped:
					fmt.Fprintf(w, "no server to stop (%s)\n", res.Server.State)
				case len(res.Signals) > 0:
					fmt.Fprintf(w, "stopped pid %d with %s\n", res.Server.PID, strings.Join(res.Signals, ", then "))
				default:
					fmt.Fprintf(w, "stopped pid %d\n", res.Server.PID)
				}
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Force, "force", false, "signal the verified leaseholder (TERM, then KILL) if it does not stop on request")
	f.DurationVar(&opts.Grace, "grace", 0, "time between TERM and KILL with --force (default 5s)")
	defaultInUsage(f, "grace")
	return cmd
}
