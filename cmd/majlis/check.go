package main

import (
	"fmt"
	"io"
	"os"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

// holderEnv names the holder that check uses outside a majlis workspace.
const holderEnv = "MAJLIS_HOLDER"

func newCheckCmd(g *globalOptions) *cobra.Command {
	var opts provider.CheckOptions
	cmd := &cobra.Command{
		Use:   "check [--holder H]",
		Short: "Compare the checkout's changed files with its holder's leases",
		Long: `Compare the changed files of the current checkout (git status: modified,
staged, untracked, both sides of renames) with the active leases of its
holder: a file lease on the path, or an intent covering it. The holder is
--holder, else the binding of the majlis workspace the checkout is, else
$MAJLIS_HOLDER; without one, check refuses (exit 2), or with --if-holder
checks nothing and succeeds.

A lease taken after an edit proves nothing, so check never grants one: every
changed path outside the leases is recorded as an enforcement_gap event, and
the policy enforcement_gap decides: allow says nothing, warn (the default)
lists the gaps as warnings, block refuses (exit 3, policy_blocked, with the
gaps in details). 'majlis hook install' runs it before every commit.`,
		Example: `  majlis check
  majlis check --holder agent-1 --json
  MAJLIS_HOLDER=agent-1 majlis check`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.DefaultHolder = os.Getenv(holderEnv)
			popts, err := providerOptions()
			if err != nil {
				return err
			}
			res, err := provider.CheckRepository(cmd.Context(), g.Repo, popts, opts)
			if err != nil {
				return err
			}
			g.warn(res.Warnings)
			return g.emit(res, func(w io.Writer) {
				switch {
				case res.Skipped:
					fmt.Fprintf(w, "nothing checked: %s is not a majlis workspace and no holder is named (--holder, %s)\n", res.Checkout, holderEnv)
				case len(res.Gaps) == 0 && res.Policy == "allow":
					fmt.Fprintf(w, "%s checked against the leases of %s; changes outside them are recorded, not reported (policy enforcement_gap=allow)\n", plural(res.Changed, "changed path", "changed paths"), res.Holder)
				case len(res.Gaps) == 0:
					fmt.Fprintf(w, "%s: every change lies inside the leases of %s\n", plural(res.Changed, "changed path", "changed paths"), res.Holder)
				default:
					fmt.Fprintf(w, "%s of %s outside the leases of %s (policy %s=%s)\n",
						plural(len(res.Gaps), "path", "paths"), plural(res.Changed, "changed path", "changed paths"), res.Holder, "enforcement_gap", res.Policy)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Holder, "holder", "", "whose leases to compare with (default: the workspace's binding, else $"+holderEnv+")")
	f.BoolVar(&opts.IfHolder, "if-holder", false, "without any holder, check nothing and succeed (for hooks)")
	return cmd
}
