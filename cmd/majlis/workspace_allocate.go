package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceAllocateCmd(g *globalOptions) *cobra.Command {
	var opts provider.AllocateOptions
	cmd := &cobra.Command{
		Use:   "allocate BINDING",
		Short: "Create a workspace (linked worktree) for a binding",
		Long: `Create a linked worktree for BINDING on a new branch (default majlis/BINDING)
at a base revision (default HEAD of the main worktree), at --path (default
<workspace root>/BINDING).

Before anything is created, majlis publishes an immutable claim for the
workspace. It refuses a binding that already has a live workspace (exit 4), a
path that already exists, lies inside another worktree (unless that worktree
ignores it, or --allow-nested) or overlaps a target being reclaimed (exit 3),
an unknown base (exit 5) and an existing branch (exit 3). A failure after the
claim leaves no worktree, directory or branch behind.

BINDING is 1 to 100 letters, digits, '.', '_' or '-', not starting with '-'
or '.'. Retrying with the same --request-id returns the recorded workspace.`,
		Example: `  majlis workspace allocate T-14
  majlis workspace allocate T-14 --base origin/main --intent 'src/auth/**' --json
  majlis workspace allocate T-15 --path ../scratch/T-15 --owner-pid $$ --request-id job-81`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Binding = args[0]
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			ws, err := p.Allocate(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return g.emit(map[string]any{"workspace": ws}, func(w io.Writer) {
				fmt.Fprintf(w, "allocated %s at %s (branch %s, base %s)\n", ws.Binding, ws.Path, ws.Branch, short(ws.Base, 12))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Base, "base", "", "revision to start from (default HEAD of the main worktree)")
	f.StringVar(&opts.Branch, "branch", "", "new branch to create (default majlis/BINDING)")
	f.StringVar(&opts.Path, "path", "", "where to create the worktree (default <workspace root>/BINDING)")
	f.StringArrayVar(&opts.Intent, "intent", nil, "repository path the task will touch, literal or ending in /** (repeatable)")
	f.IntVar(&opts.OwnerPID, "owner-pid", 0, "a process whose life marks the workspace as in use")
	f.BoolVar(&opts.AllowNested, "allow-nested", false, "allow a path inside another worktree")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
