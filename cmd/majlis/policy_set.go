package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newPolicySetCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a policy key to allow, warn or block",
		Long: `Set KEY (same_checkout_conflict, cross_worktree_overlap or enforcement_gap)
to VALUE (allow, warn or block), and record the change as an event. It takes
effect for the next admission or check; leases already granted stay. An
unknown key or value is a usage error (exit 2). Setting a value twice is
harmless.`,
		Example: `  majlis policy set cross_worktree_overlap block
  majlis policy set enforcement_gap block --json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := g.openAdmission(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			pol, err := svc.SetPolicy(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return g.emit(policyJSON{Policy: pol}, func(w io.Writer) { renderPolicy(w, pol) })
		},
	}
	// set is idempotent by itself; the flag is accepted so that every
	// mutating command takes one (docs/cli.md).
	cmd.Flags().String("request-id", "", "idempotency key (setting a value is idempotent: a retry sets it again)")
	return cmd
}
