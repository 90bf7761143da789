package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newEndCmd(g *globalOptions) *cobra.Command {
	var opts provider.EndOptions
	var tok tokenFlag
	cmd := &cobra.Command{
		Use:   "end [TASK]",
		Short: "Finish a task: release its leases and its workspace",
		Long: `End TASK (the binding its workspace was allocated for, which is also the
holder of its leases, as 'majlis begin' grants them): release every lease the
task holds, then release its workspace. The files stay until the workspace is
reclaimed.

With --reclaim, end then previews the workspace and, when there is nothing to
salvage in it, reclaims it (confirmed with that preview's digest, with all of
reclaim's checks). A workspace with work in it, or one a reclaim refuses, is
left where it is: the result says why under "not_reclaimed" (exit 0), and
'majlis workspace reclaim TASK --preview' shows what a reclaim would keep.
Ignored files (an .env, a local database) are not salvaged: end reclaims a
workspace holding them only while the policy keeps the trash (trash.keep,
default 24h), where they wait for the undo window, and "ignored" says so
(kept_in_trash); with trash.keep 0 it leaves the workspace (not_reclaimed).

A task without a workspace (begun with --shared, or whose workspace was
reclaimed) ends too: its leases are released, "workspace" is null, and
--reclaim has nothing to do. A task with neither a workspace nor any lease,
held now or before, is not found (exit 5).

Run inside a workspace without TASK, end acts on that workspace's task and
says so. A lease granted with a lease token is released only with it
(--token-file F, $MAJLIS_LEASE_TOKEN, or the task's file in
$MAJLIS_TOKEN_DIR, which end then removes), as 'majlis lease release' does;
no token is needed for leases whose owner process is proven dead.`,
		Example: `  majlis end T-14
  majlis end T-14 --reclaim --json
  cd ../app.workspaces/T-14 && majlis end`,
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
			opts.Binding = binding
			held, err := tok.forHolder(binding, false)
			if err != nil {
				return err
			}
			opts.Token = held.token
			generated := opts.RequestID == "" && opts.Reclaim
			if generated {
				opts.RequestID = newRequestID("end-" + binding)
			}
			res, err := p.End(cmd.Context(), opts)
			if err != nil {
				return withRequestID(err, opts.RequestID, generated)
			}
			held.done() // the task's leases are released: its token file goes
			out := endBody{Binding: res.Binding, Leases: res.Leases, Workspace: res.Workspace, Reclaimed: res.Reclaimed,
				Preview: res.Preview, BindingFrom: bindingFrom(fromCwd), Ignored: res.Ignored}
			if res.NotReclaimed != nil {
				out.NotReclaimed = errorObject(res.NotReclaimed)
			}
			defer func() {
				if res.Reclaimed != nil {
					g.purgeAfter(cmd.Context(), p) // once the result is written
				}
			}()
			return g.emit(endJSON{End: out}, func(w io.Writer) {
				if res.Workspace == nil {
					fmt.Fprintf(w, "ended %s: released %s; it has no workspace (begun with --shared, or reclaimed)\n", res.Binding, plural(len(res.Leases), "lease", "leases"))
					return
				}
				fmt.Fprintf(w, "ended %s: released %s and its workspace\n", res.Binding, plural(len(res.Leases), "lease", "leases"))
				switch {
				case res.Reclaimed != nil:
					renderReclaim(w, res.Reclaimed)
					if res.Ignored == provider.IgnoredKept && res.Reclaimed.TrashKeptUntil != nil {
						fmt.Fprintf(w, "its ignored files wait in the trash folder until then: 'majlis workspace restore %s --from-trash' brings them back\n", res.Binding)
					}
				case res.NotReclaimed != nil:
					// The message with the command line's hint, as a refusal shows it.
					fmt.Fprintf(w, "not reclaimed: %s\n", out.NotReclaimed.Message)
				default:
					fmt.Fprintf(w, "its files stay at %s until reclaimed\n", humanPath(res.Workspace.Path))
				}
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.Reclaim, "reclaim", false, "then reclaim the workspace if it holds nothing to salvage")
	f.BoolVar(&opts.Force, "force", false, "release leases without their lease token (recorded)")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key: a retry returns the recorded results or resumes")
	tok.register(f)
	return cmd
}
