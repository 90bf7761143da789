package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newBeginCmd(g *globalOptions) *cobra.Command {
	var opts provider.BeginOptions
	var tok tokenFlag
	var env envFlag
	cmd := &cobra.Command{
		Use:   "begin TASK --paths GLOB...",
		Short: "Allocate a task's workspace and declare what it will touch",
		Long: `Begin TASK in one step: allocate its workspace (binding TASK, branch
majlis/TASK, at --base) and acquire intent leases on --paths for holder TASK
in that workspace. With --shared, no workspace is allocated: the intents are
declared in the current checkout, where they conflict with other holders'
leases (exit 4, held, under the default policy).

A GLOB is a repository path, literal or ending in /** (a subtree). Intents
overlapping other tasks' in other worktrees are granted with a warning (policy
cross_worktree_overlap). Bad arguments are refused before anything is
allocated. The intents can only be admitted once the workspace exists: if
they are refused then, the workspace stays (the error names it, with the
request id); retry with the same --request-id once the conflict is gone to
resume, or take it back with 'majlis workspace reclaim TASK'. Retrying a
begin that succeeded returns the recorded result.

--owner-pid PID names the task's process (the agent): while it runs the
workspace is in use (reclaim refuses), it and its descendants may renew and
release the leases without their token, and once it is proven dead the
leases are recoverable and the workspace reclaimable. The
leases' token is read from --token-file F or $MAJLIS_LEASE_TOKEN, or
generated and printed once (JSON: "token"); a retry with the same
--request-id must present the same token.

--ports N also grants N free ports to the task (host:port:auto, see 'majlis
lease acquire --help'): the result lists them ("ports") and prints
MAJLIS_PORT=... lines; --env prints only those lines (and
MAJLIS_LEASE_TOKEN when one was generated), for eval or an env file.`,
		Example: `  majlis begin T-14 --paths 'src/auth/**' --paths docs/auth.md
  majlis begin T-15 --paths 'src/billing/**' --base origin/main --request-id job-15 --json
  majlis begin T-16 --paths 'docs/**' --shared
  majlis begin T-17 --paths 'web/**' --ports 2 --env > .env.majlis`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Task = args[0]
			if err := env.check(g); err != nil {
				return err
			}
			held, err := tok.forHolder(opts.Task, true)
			if err != nil {
				return err
			}
			opts.Token = held.token
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.Begin(cmd.Context(), opts)
			if err != nil {
				return err
			}
			g.warn(res.Warnings)
			if env {
				writeEnv(g.Stdout, res.Ports, res.Token)
				return nil
			}
			return g.emit(res, func(w io.Writer) {
				if res.Workspace != nil {
					fmt.Fprintf(w, "began %s in its workspace %s (branch %s)\n", res.Task, humanPath(res.Workspace.Path), res.Workspace.Branch)
				} else {
					fmt.Fprintf(w, "began %s in the shared checkout %s\n", res.Task, res.Checkout)
				}
				renderGrant(w, res.Leases, nil, res.Ports, res.Token)
				if held.created {
					fmt.Fprintf(w, "lease token kept in %s (mode 0600): lease acquire, renew, release and end of %s need it\n", humanPath(held.file), res.Task)
				}
			})
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Paths, "paths", nil, "repository paths the task will touch, literal or ending in /** (repeatable, or comma-separated)")
	f.StringVar(&opts.Base, "base", "", "revision the workspace starts from (default HEAD of the main worktree)")
	f.BoolVar(&opts.Shared, "shared", false, "declare the intents in the current checkout; allocate no workspace")
	f.DurationVar(&opts.TTL, "ttl", 0, "lifetime of the intent leases (default 10m)")
	defaultInUsage(f, "ttl")
	f.StringVar(&opts.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result or resumes")
	f.IntVar(&opts.OwnerPID, "owner-pid", 0, "the task's process: its life marks the workspace and leases in use")
	f.IntVar(&opts.Ports, "ports", 0, "also grant this many free ports to the task (host:port:auto)")
	f.BoolVar(&opts.NoPool, "no-pool", false, "make the worktree with git worktree add even when a pooled worktree is ready")
	f.BoolVar((*bool)(&env), "env", false, "print only MAJLIS_PORT=... lines (and a generated MAJLIS_LEASE_TOKEN) for eval or an env file")
	tok.register(f)
	return cmd
}
