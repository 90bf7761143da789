package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newWorkspaceShowCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "show BINDING",
		Short: "Show one workspace, with its uncommitted changes",
		Long:  "Show the workspace of BINDING, with whether it is dirty and its changes counted by kind (from git status).",
		Example: `  majlis workspace show T-14
  majlis workspace show T-14 --json | jq .workspace.dirty`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			ws, err := p.Show(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return g.emit(workspaceJSON{Workspace: ws}, func(w io.Writer) {
				tw := table(w)
				fmt.Fprintf(tw, "binding\t%s\n", ws.Binding)
				fmt.Fprintf(tw, "state\t%s\n", ws.State)
				fmt.Fprintf(tw, "path\t%s\n", ws.Path)
				if ws.PhysicalPath != ws.Path {
					fmt.Fprintf(tw, "physical path\t%s\n", ws.PhysicalPath)
				}
				fmt.Fprintf(tw, "branch\t%s\n", ws.Branch)
				fmt.Fprintf(tw, "base\t%s\n", ws.Base)
				fmt.Fprintf(tw, "head\t%s\n", ws.Head)
				if len(ws.Intent) > 0 {
					fmt.Fprintf(tw, "intent\t%s\n", strings.Join(ws.Intent, " "))
				}
				if ws.Dirty != nil {
					if *ws.Dirty {
						c := ws.Changes
						fmt.Fprintf(tw, "changes\t%d modified, %d added, %d deleted, %d renamed, %d untracked, %d conflicted\n",
							c.Modified+c.TypeChanged, c.Added, c.Deleted, c.Renamed+c.Copied, c.Untracked, c.Conflicted)
					} else {
						fmt.Fprintf(tw, "changes\tnone (clean)\n")
					}
				}
				if len(ws.DirtySubmodules) > 0 {
					fmt.Fprintf(tw, "dirty submodules\t%s (salvage cannot capture their changes)\n", strings.Join(ws.DirtySubmodules, " "))
				}
				fmt.Fprintf(tw, "claim\t%s\n", ws.ClaimDigest)
				tw.Flush()
			})
		},
	}
}
