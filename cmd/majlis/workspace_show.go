package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newWorkspaceShowCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "show [BINDING]",
		Short: "Show one workspace, with its uncommitted changes",
		Long:  "Show the workspace of BINDING, with whether it is dirty and its changes counted by kind (from git status: the one counts object, every key always present, ignored files counted).\n\nRun inside a workspace without BINDING, it acts on that workspace and says so.",
		Example: `  majlis workspace show T-14
  majlis workspace show T-14 --json | jq .workspace.dirty`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			binding, fromCwd, err := g.bindingOf(p, args)
			if err != nil {
				return err
			}
			ws, err := p.Show(cmd.Context(), binding)
			if err != nil {
				return err
			}
			return g.emit(workspaceJSON{Workspace: ws, BindingFrom: bindingFrom(fromCwd)}, func(w io.Writer) {
				tw := table(w)
				fmt.Fprintf(tw, "binding\t%s\n", ws.Binding)
				fmt.Fprintf(tw, "state\t%s\n", ws.State)
				fmt.Fprintf(tw, "path\t%s\n", humanPath(ws.Path))
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
