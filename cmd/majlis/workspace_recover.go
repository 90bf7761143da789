package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newWorkspaceRecoverCmd(g *globalOptions) *cobra.Command {
	var requestID string
	cmd := &cobra.Command{
		Use:   "recover BINDING",
		Short: "Retire a crashed reclaim's reservation once its owner is proven dead",
		Long: `Retire BINDING's reclaim reservation when it has expired AND its owner is
proven dead on this host (same machine, and another boot, or no process with
the owner's pid and start time). An owner that is alive, on another host, or
whose state cannot be read keeps the reservation (exit 4, with its facts).

Recovery retires the lease file only: never the claim, the worktree or a ref.
A retry of the reclaim then resumes. A retry also recovers automatically when
the same proof holds.`,
		Example: `  majlis workspace recover T-14
  majlis workspace recover T-14 --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			rec, err := p.RecoverReservation(cmd.Context(), args[0], requestID)
			if err != nil {
				return err
			}
			return g.emit(recoveredJSON{Recovered: rec}, func(w io.Writer) {
				fmt.Fprintf(w, "recovered the reservation of %s (generation %d, held by dead pid %d)\n",
					args[0], rec.Generation, rec.Owner.PID)
			})
		},
	}
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
