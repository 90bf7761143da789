package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newPolicyCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show and set what lease conflicts get and how long the trash is kept",
		Long: `The repository's trusted policy decides what a lease conflict or an
enforcement gap gets: allow (proceed silently), warn (proceed with a warning
naming the key) or block (refuse); and how long a reclaimed workspace is kept
in its trash folder (the undo window). It lives in the repository's state
folder, never in a worktree, where a task could edit it. Keys:

  same_checkout_conflict  two holders' leases overlap inside one checkout (default block)
  cross_worktree_overlap  an intent overlaps another holder's lease in another
                          worktree of the repository (default warn)
  enforcement_gap         'majlis check' finds a change outside the holder's leases (default warn)
  port_range              where host:port:auto picks ports, LO-HI (default 20000-29999)
  trash.keep              how long a reclaim keeps the workspace in its trash
                          folder, so that 'workspace restore --from-trash'
                          undoes it (a Go duration; default 24h; 0 deletes at once)
  trash.max_bytes         the most all kept trash may take together; beyond it
                          the oldest goes first (a size: 10GiB, 500MB; default 10GiB)
  trash.min_free          the free disk space the kept trash never eats into;
                          below it the oldest goes first (a size, or a share of
                          the disk such as 10%; default 10%)
  pool.size               how many ready pooled worktrees the repository's server
                          keeps in the background ('majlis pool'; default 0: none)
  pool.max_bytes          the most all pooled worktrees may take together; a fill
                          stops before passing it (a size; default 10GiB)
  pool.keep_ignored       ignored caches a pooled worktree may keep warm between
                          tasks: exact paths from the worktree's root, separated
                          by commas, such as node_modules,target (default: none;
                          read the risks in 'majlis pool --help' first)

Host singletons (host:NAME) are always exclusive, whatever the policy. 'policy
show' says where each value comes from: default (never set) or repository.`,
		Example: `  majlis policy show
  majlis policy set cross_worktree_overlap block
  majlis policy set trash.keep 0
  majlis policy set pool.keep_ignored node_modules,web/node_modules`,
	}
	cmd.AddCommand(newPolicyShowCmd(g), newPolicySetCmd(g))
	return cmd
}

// renderPolicy prints every key with its value and where it comes from.
func renderPolicy(w io.Writer, p *provider.PolicyView) {
	tw := table(w)
	for _, k := range provider.PolicyKeys() {
		v := p.Setting(k)
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t(%s)\n", k, v, p.Sources[k])
	}
	tw.Flush()
	if p.Shared != "" {
		fmt.Fprintf(w, "\nshared through %s, with %d clone(s):\n", p.Shared, len(p.Clones))
		tw = table(w)
		for _, c := range p.Clones {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Clone, c.Host, c.StateDir)
		}
		tw.Flush()
	}
}
