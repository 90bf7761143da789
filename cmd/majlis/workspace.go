package main

import (
	"context"
	"io"
	"text/tabwriter"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workspace",
		Aliases: []string{"ws"},
		Short:   "Allocate, inspect, salvage and release task workspaces",
		Long: `A workspace is a linked worktree that majlis allocated for one binding (a
task id such as T-14). Allocation publishes an immutable claim first; salvage
preserves uncommitted work on refs/majlis/salvage/<binding>/<n> without
touching the workspace; release records that the holder is done.`,
		Example: `  majlis workspace allocate T-14 --json
  majlis workspace list
  majlis workspace salvage T-14
  majlis workspace restore T-14`,
	}
	cmd.AddCommand(
		newWorkspaceAllocateCmd(g),
		newWorkspaceListCmd(g),
		newWorkspaceShowCmd(g),
		newWorkspaceReleaseCmd(g),
		newWorkspaceSalvageCmd(g),
		newWorkspaceReclaimCmd(g),
		newWorkspaceRecoverCmd(g),
		newWorkspaceRestoreCmd(g),
	)
	return cmd
}

// openProvider opens the registered repository named by --repo (default:
// the working directory's).
func (g *globalOptions) openProvider(ctx context.Context) (*provider.Provider, error) {
	opts, err := providerOptions()
	if err != nil {
		return nil, err
	}
	p, err := provider.Open(ctx, g.Repo, opts)
	if err != nil {
		return nil, err
	}
	g.progressDone = g.attachProgress(p)
	return p, nil
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func short(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
