package main

import "github.com/spf13/cobra"

func newHookCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Install the git hook that runs 'majlis check' before commits",
		Long: `Git hooks that enforce leases: the pre-commit hook runs 'majlis check' so
that a commit with changes outside the committing task's leases is reported,
or refused when the policy enforcement_gap is block.`,
		Example: `  majlis hook install`,
	}
	cmd.AddCommand(newHookInstallCmd(g))
	return cmd
}
