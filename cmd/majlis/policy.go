package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newPolicyCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show and set what lease conflicts and enforcement gaps get",
		Long: `The repository's trusted policy decides what a lease conflict or an
enforcement gap gets: allow (proceed silently), warn (proceed with a warning
naming the key) or block (refuse). It lives in the repository's state folder,
never in a worktree, where a task could edit it. Keys:

  same_checkout_conflict  two holders' leases overlap inside one checkout (default block)
  cross_worktree_overlap  an intent overlaps another holder's lease in another
                          worktree of the repository (default warn)
  enforcement_gap         'majlis check' finds a change outside the holder's leases (default warn)

Host singletons (host:NAME) are always exclusive, whatever the policy.`,
		Example: `  majlis policy show
  majlis policy set cross_worktree_overlap block`,
	}
	cmd.AddCommand(newPolicyShowCmd(g), newPolicySetCmd(g))
	return cmd
}

// renderPolicy prints every key with its value, marking defaults.
func renderPolicy(w io.Writer, p admission.PolicySet) {
	def := admission.DefaultPolicy()
	tw := table(w)
	for _, k := range admission.PolicyKeys() {
		note := ""
		if p.Value(k) == def.Value(k) {
			note = "(default)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k, p.Value(k), note)
	}
	tw.Flush()
}
