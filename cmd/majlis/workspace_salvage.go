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
		Use:   "salvage [BINDING]",
		Short: "Preserve uncommitted work on a salvage ref, touching nothing",
		Long: `Keep everything a removal of the workspace would lose, except ignored files, as
one salvage commit on refs/majlis/salvage/BINDING/<n>, without touching the
workspace's index, HEAD, branch, refs or files: the worktree's files (tracked
changes, staged or not, untracked files, hidden assume-unchanged and
skip-worktree edits, files outside a sparse cone), the index whole
(partially staged files, conflicts, intent-to-add), commits no branch or tag
reaches (a detached HEAD, per-worktree refs, reflogs, an interrupted
rebase's), per-worktree refs and an interrupted operation's state. A
workspace with nothing of that makes no ref ("clean": true).

The commit's parents are HEAD, the index commit, an empty stand-in for git
stash's untracked-files commit, the meta commit (the worktree's git
directory files) and the pinned commits; its message's trailers list them.
'majlis workspace restore' recreates a workspace from it. Submodules and
nested repositories are recorded as pointers only: their own changes are not
captured, and the result lists them. FIFOs, sockets and device nodes cannot be
kept at all (git passes them by): the result counts and names them
("special_files", "special_paths"). "changes" counts the workspace's changes
by kind as git status saw them just before.

Run inside a workspace without BINDING, it acts on that workspace and says so.`,
		Example: `  majlis workspace salvage T-14
  majlis workspace salvage T-14 -m "before rebase" --json
  git log -1 refs/majlis/salvage/T-14/1      # the trailers name every parent
  git diff refs/majlis/salvage/T-14/1^1 refs/majlis/salvage/T-14/1`,
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
			res, err := p.Salvage(cmd.Context(), binding, message, requestID)
			if err != nil {
				return err
			}
			return g.emit(salvageJSON{Salvage: res, BindingFrom: bindingFrom(fromCwd)}, func(w io.Writer) {
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
				if res.SpecialFiles > 0 {
					fmt.Fprintf(w, "not captured: %d special files (git cannot keep them): %s\n", res.SpecialFiles, specialList(res.SpecialFiles, res.SpecialPaths))
				}
			})
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "salvage commit message")
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
