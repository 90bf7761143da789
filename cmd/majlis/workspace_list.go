package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceListCmd(g *globalOptions) *cobra.Command {
	var opts provider.ListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the repository's workspaces",
		Long: `List the workspaces majlis allocated in this repository, with their state:
active, released, reclaiming, reclaimed (only with --all), missing (the
directory is gone) or damaged (its records cannot all be read: "damage" names
the file, the reason and where the workspace may be; 'majlis doctor' says
what to do).`,
		Example: `  majlis workspace list
  majlis workspace list --all --json | jq -r '.workspaces[] | select(.state=="released") | .binding'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			list, err := p.List(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return g.emit(workspacesJSON{Workspaces: list}, func(w io.Writer) {
				if len(list) == 0 {
					fmt.Fprintln(w, "no workspaces (allocate one with: majlis workspace allocate BINDING)")
					return
				}
				tw := table(w)
				fmt.Fprintln(tw, "BINDING\tSTATE\tBRANCH\tHEAD\tPATH")
				for _, ws := range list {
					head := short(ws.Head, 12)
					if ws.State == provider.StateReclaimed {
						head = "-"
						if ws.SalvageRef != "" {
							head = "salvaged to " + ws.SalvageRef
						}
					}
					if ws.Damage != nil {
						head = "damaged record " + ws.Damage.File + " (majlis doctor)"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ws.Binding, ws.State, ws.Branch, head, ws.Path)
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "include reclaimed workspaces")
	return cmd
}
