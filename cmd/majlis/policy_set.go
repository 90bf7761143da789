package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newPolicySetCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a policy key",
		Long: `Set KEY to VALUE: same_checkout_conflict, cross_worktree_overlap or
enforcement_gap to allow, warn or block (the change is recorded as an event;
it takes effect for the next admission or check; leases already granted
stay); port_range to LO-HI; trash.keep to a Go duration (0: reclaims delete
their trash at once), trash.max_bytes to a size, trash.min_free to a size or
a share of the disk (see 'majlis policy --help'), each taking effect with the
next reclaim or purge; pool.size to a number, pool.max_bytes to a size,
pool.keep_ignored to exact paths separated by commas ('' for none), each
taking effect with the next fill or hand-out. An unknown key or value is a usage error (exit 2).
Setting a value twice is harmless.`,
		Example: `  majlis policy set cross_worktree_overlap block
  majlis policy set enforcement_gap block --json
  majlis policy set trash.keep 72h
  majlis policy set pool.keep_ignored ''`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			pol, err := p.SetPolicy(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return g.emit(newPolicyJSON(pol), func(w io.Writer) { renderPolicy(w, pol) })
		},
	}
	// set is idempotent by itself; the flag is accepted so that every
	// mutating command takes one (docs/cli.md).
	cmd.Flags().String("request-id", "", "idempotency key (setting a value is idempotent: a retry sets it again)")
	return cmd
}
