package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newPolicyShowCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Show the repository's policy",
		Long: `Show every policy key with its value (allow, warn or block for the conflict
keys; LO-HI for port_range; a duration, a size or a share of the disk for the
trash's keys) and where it comes from: default (never set), repository (set
with 'majlis policy set'), or shared (a coordination cluster's).`,
		Example: `  majlis policy show
  majlis policy show --json | jq -r .policy.enforcement_gap
  majlis policy show --json | jq -r '.sources["trash.keep"]'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			pol, err := p.Policy(cmd.Context())
			if err != nil {
				return err
			}
			return g.emit(newPolicyJSON(pol), func(w io.Writer) { renderPolicy(w, pol) })
		},
	}
}
