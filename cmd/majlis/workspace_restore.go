package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceRestoreCmd(g *globalOptions) *cobra.Command {
	var opts provider.RestoreOptions
	var fromTrash bool
	cmd := &cobra.Command{
		Use:   "restore BINDING [--from-trash]",
		Short: "Recreate a reclaimed workspace from its salvage",
		Long: `Recreate BINDING's workspace from a salvage (the latest, or --salvage N for
refs/majlis/salvage/BINDING/N), as a new workspace: a new claim, allocated with
allocate's checks, at --path (default: where allocate would put it). The
binding must have no live workspace.

Restored: HEAD (the branch, or a detached HEAD), the worktree's files
(deletions, modes and symbolic links included; files outside a sparse cone
left out as they were), the index whole (staged versions, conflicts,
intent-to-add entries, assume-unchanged and skip-worktree flags), the
per-worktree refs and reflogs, and an interrupted rebase, merge, cherry-pick,
revert or bisect. The result lists what was restored and what was not (the
contents of submodules, say). A salvage made by an earlier majlis (one parent)
restores its files onto HEAD, every change unstaged.

Without --branch, the workspace gets its old branch: created again if it is
gone, checked out as it is if it still points at the salvage's HEAD, and
refused (exit 3, branch_exists) if it has moved: majlis never moves a branch.
--branch NAME creates a new branch at the salvage's HEAD instead. A path that
exists is refused (exit 3, path_exists).

A salvage taken before the branch's first commit (or after the branch was
deleted under the workspace, which git sees the same way) is restored as it
was: HEAD on that branch, still without a commit, every file staged as new
("unborn": true); refused (branch_exists) if the branch exists now. A branch
deleted after the salvage is created again at the salvage's HEAD.

--from-trash undoes a reclaim whose trash folder is still kept (the undo
window: the policy's trash.keep, default 24h, or reclaim --keep-trash D):
the directory itself is moved back to its path with one rename (never
replacing anything), with everything it held, ignored files included; git's
entry of it is pointed there again, and a new claim of BINDING takes it over;
the result is then {"workspace": WORKSPACE}. The trash of any earlier claim of
BINDING is found. Its HEAD goes back on its branch when the branch has not
moved; otherwise it stays detached at the commit the workspace was on, and
"detached_from" names the branch (majlis never moves a branch, nor leaves
files under a branch they do not match). A trash folder a purge began to
delete is refused (exit 3, interrupted): its work is on the salvage refs. It
takes none of --salvage, --path and --branch.`,
		Example: `  majlis workspace restore T-14
  majlis workspace restore T-14 --salvage 2 --path /tmp/T-14-again --json
  majlis workspace restore T-14 --branch T-14-retry
  majlis workspace restore T-14 --from-trash --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Binding = args[0]
			if fromTrash && (opts.Salvage != 0 || opts.Path != "" || opts.Branch != "") {
				return &usageError{fmt.Errorf("--from-trash takes none of --salvage, --path and --branch")}
			}
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			if fromTrash {
				ws, err := p.RestoreFromTrash(cmd.Context(), opts.Binding, opts.RequestID)
				if err != nil {
					return err
				}
				return g.emit(workspaceJSON{Workspace: ws}, func(w io.Writer) { renderFromTrash(w, ws) })
			}
			res, err := p.Restore(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return g.emit(restoreJSON{Restore: res}, func(w io.Writer) {
				head := "detached HEAD at " + short(res.Head, 12)
				if res.Branch != nil {
					head = "branch " + *res.Branch + " at " + short(res.Head, 12)
				}
				if res.Unborn && res.Branch != nil {
					head = "branch " + *res.Branch + ", no commit yet"
				}
				fmt.Fprintf(w, "restored %s at %s from %s (%s)\n", res.Workspace.Binding, humanPath(res.Workspace.Path), res.SalvageRef, head)
				for _, r := range res.Restored {
					fmt.Fprintf(w, "  restored: %s\n", r)
				}
				for _, r := range res.NotRestored {
					fmt.Fprintf(w, "  not restored: %s\n", r)
				}
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Salvage, "salvage", 0, "restore refs/majlis/salvage/BINDING/N (default: the latest)")
	f.StringVar(&opts.Path, "path", "", "where to put the workspace (must not exist)")
	f.StringVar(&opts.Branch, "branch", "", "a new branch at the salvage's HEAD (default: the workspace's own, never moved)")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key for the allocation")
	f.BoolVar(&fromTrash, "from-trash", false, "move the workspace back from the trash folder its reclaim kept (reclaim --keep-trash)")
	return cmd
}

// renderFromTrash says where restore --from-trash put the workspace back,
// and on what HEAD.
func renderFromTrash(w io.Writer, ws *provider.Workspace) {
	if ws.Branch != "" {
		fmt.Fprintf(w, "restored %s at %s from its trash folder (branch %s)\n", ws.Binding, humanPath(ws.Path), ws.Branch)
		return
	}
	fmt.Fprintf(w, "restored %s at %s from its trash folder, on a detached HEAD", ws.Binding, humanPath(ws.Path))
	if ws.DetachedFrom != "" {
		fmt.Fprintf(w, ": branch %s moved or went since the reclaim, or is checked out elsewhere (majlis never moves a branch)", ws.DetachedFrom)
	}
	fmt.Fprintln(w)
}
