package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newWorkspaceAllocateCmd(g *globalOptions) *cobra.Command {
	var opts provider.AllocateOptions
	var ports int
	var tok tokenFlag
	var env envFlag
	cmd := &cobra.Command{
		Use:        "allocate BINDING",
		SuggestFor: []string{"create", "new", "add", "make"},
		Short:      "Create a workspace (linked worktree) for a binding",
		Long: `Create a linked worktree for BINDING on a new branch (default majlis/BINDING)
at a base revision (default HEAD of the main worktree), at --path (default
<workspace root>/BINDING).

Before anything is created, majlis publishes an immutable claim for the
workspace. It refuses a binding that already has a live workspace (exit 4), a
path that already exists, lies inside another worktree (unless that worktree
ignores it, or --allow-nested) or overlaps a target being reclaimed (exit 3),
an unknown base (exit 5) and an existing branch (exit 3). A failure after the
claim leaves no worktree, directory or branch behind.

--checkout BRANCH checks out an existing branch instead, as it is: the
workspace starts at its tip, and majlis never moves or deletes that branch
(the claim records that majlis did not create it). A branch checked out in
any worktree is refused (exit 3, branch_checked_out, naming the worktree);
an unknown one exits 5 (unknown_branch). A binding reclaimed keeps its branch
majlis/BINDING: allocate it again with --checkout majlis/BINDING.

BINDING is 1 to 100 letters, digits, '.', '_' or '-', not starting with '-'
or '.'. Retrying with the same --request-id returns the recorded workspace.

--ports N then grants N free ports to BINDING (host:port:auto, see 'majlis
lease acquire --help'): the result lists them ("ports", "leases") and prints
MAJLIS_PORT=... lines; --env prints only those lines (and MAJLIS_LEASE_TOKEN
when one was generated). When no port is free the workspace stays (exit 4,
no_free_port, the error names it).`,
		Example: `  majlis workspace allocate T-14
  majlis workspace allocate T-14 --base origin/main --intent 'src/auth/**' --json
  majlis workspace allocate T-14 --checkout majlis/T-14
  majlis workspace allocate T-16 --ports 2 --env > T-16.env
  majlis workspace allocate T-15 --path ../scratch/T-15 --owner-pid $$ --request-id job-81`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Binding = args[0]
			if err := env.check(g); err != nil {
				return err
			}
			held, err := tok.forHolder(opts.Binding, ports > 0)
			if err != nil {
				return err
			}
			token := held.token
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.AllocateWithPorts(cmd.Context(), opts, ports, token)
			if err != nil {
				return err
			}
			if env {
				writeEnv(g.Stdout, res.Ports, res.Token)
				return nil
			}
			ws := res.Workspace
			return g.emit(res, func(w io.Writer) {
				from := ""
				if ws.Pool != nil && ws.Pool.Used {
					from = ", from the warm pool"
				}
				fmt.Fprintf(w, "allocated %s at %s (branch %s, base %s%s)\n", ws.Binding, humanPath(ws.Path), ws.Branch, short(ws.Base, 12), from)
				for _, l := range portEnv(res.Ports) {
					fmt.Fprintln(w, l)
				}
				if res.Token != "" {
					fmt.Fprintf(w, "lease token (shown once; renew and release need it): %s\n", res.Token)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Base, "base", "", "revision to start from (default HEAD of the main worktree)")
	f.StringVar(&opts.Branch, "branch", "", "new branch to create (default majlis/BINDING)")
	f.StringVar(&opts.CheckoutBranch, "checkout", "", "existing branch to check out as it is (instead of a new branch)")
	f.StringVar(&opts.Path, "path", "", "where to create the worktree (default <workspace root>/BINDING)")
	f.StringArrayVar(&opts.Intent, "intent", nil, "repository path the task will touch, literal or ending in /** (repeatable)")
	f.IntVar(&opts.OwnerPID, "owner-pid", 0, "a process whose life marks the workspace as in use")
	f.BoolVar(&opts.AllowNested, "allow-nested", false, "allow a path inside another worktree")
	f.BoolVar(&opts.NoPool, "no-pool", false, "make the worktree with git worktree add even when a pooled worktree is ready")
	f.IntVar(&ports, "ports", 0, "also grant this many free ports to the binding (host:port:auto)")
	f.BoolVar((*bool)(&env), "env", false, "print only MAJLIS_PORT=... lines (and a generated MAJLIS_LEASE_TOKEN) for eval or an env file")
	tok.register(f)
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
