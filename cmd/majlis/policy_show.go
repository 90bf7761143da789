package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newPolicyShowCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Show the repository's policy",
		Long:  "Show every policy key with its value: allow, warn or block. Keys never set have their defaults.",
		Example: `  majlis policy show
  majlis policy show --json | jq -r .policy.enforcement_gap`,
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
