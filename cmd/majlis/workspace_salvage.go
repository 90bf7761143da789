package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

func newWorkspaceSalvageCmd(g *globalOptions) *cobra.Command {
	var message, requestID string
	cmd := &cobra.Command{
		Use:   "salvage BINDING",
		Short: "Preserve uncommitted work on a salvage ref, touching nothing",
		Long: `Commit the workspace's uncommitted state (tracked changes, staged or not, and
untracked files that are not ignored) onto refs/majlis/salvage/BINDING/<n>,
without touching the workspace's index, HEAD, branch or files. A clean
workspace makes no ref ("clean": true).

Submodules and nested repositories are recorded as pointers only: their own
changes are not captured, and the result lists them.`,
		Example: `  majlis workspace salvage T-14
  majlis workspace salvage T-14 -m "before rebase" --json
  git log -p refs/majlis/salvage/T-14/1`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.Salvage(cmd.Context(), args[0], message, requestID)
			if err != nil {
				return err
			}
			return g.emit(map[string]any{"salvage": res}, func(w io.Writer) {
				if res.Clean {
					fmt.Fprintf(w, "%s is clean: nothing to salvage\n", res.Binding)
				} else {
					fmt.Fprintf(w, "salvaged %d files of %s to %s (%s)\n", res.Files, res.Binding, *res.Ref, short(*res.Commit, 12))
				}
				if len(res.DirtySubmodules) > 0 {
					fmt.Fprintf(w, "not captured: changes inside submodules %s\n", strings.Join(res.DirtySubmodules, ", "))
				}
				if len(res.NestedRepositories) > 0 {
					fmt.Fprintf(w, "not captured: files of nested repositories %s\n", strings.Join(res.NestedRepositories, ", "))
				}
			})
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "salvage commit message")
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
