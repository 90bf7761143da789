package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newPoolCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Keep clean worktrees ready, so that allocating a workspace is fast",
		Long: `The warm pool holds clean worktrees made ahead of any task: detached, locked
by majlis, in folders beside the workspaces (.majlis-pool-*). 'workspace
allocate' takes one when there is one, checks it is still clean and still the
worktree majlis made, switches it to the requested base (touching only the
files that differ) and renames it into place, instead of checking out every
file again. 'pool fill' makes them, 'pool list' shows them, 'pool drain'
deletes them (only those still clean and majlis's own).

The policy's pool.keep_ignored names caches (node_modules, target) a pooled
worktree may keep although git ignores them, so that the next task starts
with them warm; nothing else ignored is ever handed out. Its risks: a cache
that records absolute paths (a virtualenv, a CMake build folder) breaks when
the worktree moves to the workspace's path, and a cache carries what the
task before left in it (its secrets, or build output it poisoned) into the
next task. Keep only caches you would share between your own tasks.`,
		Example: `  majlis pool fill --size 2
  majlis pool list
  majlis pool drain`,
	}
	cmd.AddCommand(newPoolFillCmd(g), newPoolListCmd(g), newPoolDrainCmd(g))
	return cmd
}

func newPoolFillCmd(g *globalOptions) *cobra.Command {
	var o provider.PoolFillOptions
	cmd := &cobra.Command{
		Use:   "fill",
		Short: "Make pooled worktrees until the pool holds --size ready ones",
		Long: `Make pooled worktrees, each a full checkout of --base with HEAD detached, until
the pool holds --size ready ones. No hook runs: a workspace taken from the pool
runs its post-checkout hook when it is handed out, as 'git worktree add' would.`,
		Example: `  majlis pool fill
  majlis pool fill --size 3 --base origin/main
  majlis pool fill --json | jq -r '.created[].path'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.PoolFill(cmd.Context(), o)
			if err != nil {
				return err
			}
			return g.emit(res, func(w io.Writer) { renderPool(w, res, "made") })
		},
	}
	cmd.Flags().IntVar(&o.Size, "size", 0, "how many ready pooled worktrees the pool holds after the fill (default: the policy's pool.size, else 1)")
	cmd.Flags().StringVar(&o.Base, "base", "", "the revision new pooled worktrees are checked out at (default HEAD)")
	return cmd
}

func newPoolListCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the pooled worktrees and their state",
		Long: `List the pooled worktrees, oldest first, with their state: ready (allocate may
take it), filling (a fill is making it, or died doing so), taken (an allocation
took it) or aside (it failed a check and is never handed out: 'majlis doctor'
says what to do).`,
		Example: `  majlis pool list
  majlis pool list --json | jq '[.pool[] | select(.state == "ready")] | length'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.PoolList()
			if err != nil {
				return err
			}
			return g.emit(res, func(w io.Writer) { renderPool(w, res, "") })
		},
	}
}

func newPoolDrainCmd(g *globalOptions) *cobra.Command {
	var o provider.PoolDrainOptions
	cmd := &cobra.Command{
		Use:   "drain",
		Short: "Delete pooled worktrees, keeping --keep ready ones",
		Long: `Delete the ready pooled worktrees beyond --keep (the oldest first), those set
aside, and those a fill died making. Only a pooled worktree that is still clean
(no change, no untracked or ignored file) and still majlis's own (the same
folder, git's entry and majlis's pin) is deleted; any other is left and
reported with the reason. One an allocation took is never touched.`,
		Example: `  majlis pool drain
  majlis pool drain --keep 1 --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.PoolDrain(cmd.Context(), o)
			if err != nil {
				return err
			}
			return g.emit(res, func(w io.Writer) { renderPool(w, res, "deleted") })
		},
	}
	cmd.Flags().IntVar(&o.Keep, "keep", 0, "how many ready pooled worktrees to keep")
	return cmd
}

// renderPool prints the pool, then what the command made or deleted and
// what it left.
func renderPool(w io.Writer, res *provider.PoolResult, verb string) {
	for _, c := range res.Created {
		fmt.Fprintf(w, "%s %s\n", verb, humanPath(c.Path))
	}
	for _, d := range res.Drained {
		fmt.Fprintf(w, "%s %s\n", verb, humanPath(d.Path))
	}
	for _, l := range res.Left {
		fmt.Fprintf(w, "left %s: %s\n", humanPath(l.Path), l.Reason)
	}
	if res.Stopped != nil {
		fmt.Fprintf(w, "stopped before the pool was full: %s\n", res.Stopped.Message)
	}
	if len(res.Pool) == 0 {
		fmt.Fprintln(w, "the pool is empty")
		return
	}
	tw := table(w)
	for _, e := range res.Pool {
		extra := e.Reason
		if e.Taker != "" {
			extra = "for " + e.Taker
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.State, short(e.Base, 12), humanPath(e.Path), extra)
	}
	tw.Flush()
}
