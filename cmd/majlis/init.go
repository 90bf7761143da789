package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newInitCmd(g *globalOptions) *cobra.Command {
	var opts provider.InitOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Register the repository with majlis",
		Long: `Register the repository containing the working directory (or --repo) with
majlis. Its state lives in <git-common-dir>/majlis/, shared by all its
worktrees and never inside one. Running init again reports the existing
registration.

Workspaces go under --workspace-root, by default a folder beside the main
worktree named <repository>.workspaces.

A bare repository is not run in directly (exit 2): add a worktree to it
('git -C app.git worktree add ../wt') and run init there, with
--workspace-root. A repository made with 'git init --separate-git-dir' is
registered from its main worktree, which init records.`,
		Example: `  majlis init
  majlis init --workspace-root ~/work/app.workspaces --json
  majlis --repo ../wt init --workspace-root ~/work/app.workspaces   # wt: a worktree of a bare repository`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			repo, err := provider.Init(cmd.Context(), g.Repo, opts)
			if err != nil {
				return err
			}
			return g.emit(initJSON{Repository: repo}, func(w io.Writer) {
				tw := table(w)
				fmt.Fprintf(tw, "repository\t%s\n", repo.ID)
				fmt.Fprintf(tw, "git common dir\t%s\n", humanPath(repo.CommonDir))
				fmt.Fprintf(tw, "state\t%s\n", humanPath(repo.StateDir))
				fmt.Fprintf(tw, "workspaces\t%s\n", humanPath(repo.WorkspaceRoot))
				tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&opts.WorkspaceRoot, "workspace-root", "", "where workspaces go by default")
	// init is idempotent by itself; the flag is accepted so that every
	// mutating command takes one (docs/cli.md).
	cmd.Flags().String("request-id", "", "idempotency key (init is idempotent: a retry reports the registration)")
	return cmd
}
