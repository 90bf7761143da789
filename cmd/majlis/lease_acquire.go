package main

import (
	"fmt"
	"io"
	"os"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseAcquireCmd(g *globalOptions) *cobra.Command {
	var req admission.AcquireRequest
	var tok tokenFlag
	var env envFlag
	cmd := &cobra.Command{
		Use:   "acquire --holder H RESOURCE...",
		Short: "Acquire leases on files, intents and host names, all or none",
		Long: `Grant every RESOURCE to the holder, or none of them. RESOURCE is file:PATH,
intent:PATH, intent:DIR/**, intent:** (the whole checkout) or host:NAME.
host:port:auto (repeatable) picks a free port: see "Ports" below.
Relative paths are taken from the working directory when it lies in the
checkout (--repo DIR names another), else from the checkout's top level.

Refusals change nothing: a conflict with another holder's live lease that the
policy blocks, or a host name held elsewhere on the machine (exit 4, held,
with the conflicts in details); a quarantined resource, or a path that is
unsafe (traversal with .., a symbolic link leaving the checkout, a hard-linked
file, the .git folder) (exit 3). Conflicts the policy lets through are granted
with a warning naming the policy key. A resource the holder already holds,
active, in the same checkout is returned unchanged.

Every grant has a secret lease token: the one in --token-file F or
$MAJLIS_LEASE_TOKEN, or, when neither is given, a new one, printed this once
(JSON: "token"). Renewing and releasing the leases needs it (or --force,
which is recorded); the ledger keeps only its digest.

--owner-pid (alias --pid) records a process with the leases: that process
and its descendants may renew and release them without the token; once it is
proven dead, a quarantine of them lifts by itself and anyone may release them
(a refusal then says "recoverable", exit 4, instead of held). Retrying with
the same --request-id returns the recorded result and grants nothing new; it
must present the same token.

Ports: each host:port:auto is granted as host:port:N, N a port of the
policy's port_range (default 20000-29999, 'majlis policy set port_range
LO-HI') that no live lease names and that nothing listens on (bound on
127.0.0.1 and ::1 to prove it). The result lists them ("ports") and prints
MAJLIS_PORT=N (the first) and MAJLIS_PORT_1=N ... MAJLIS_PORT_K=N; --env
prints only those lines (and MAJLIS_LEASE_TOKEN when one was generated),
for eval or an env file. No free port: exit 4, no_free_port.`,
		Example: `  majlis lease acquire --holder agent-1 file:src/auth/session.go
  majlis lease acquire --holder agent-1 --ttl 30m 'intent:src/auth/**' host:port:3000 --json
  eval "$(majlis lease acquire --holder agent-1 host:port:auto --env)"; npm run dev -- --port "$MAJLIS_PORT"
  majlis lease acquire --holder agent-2 --owner-pid $$ --token-file ~/.agent-2.token --request-id job-7 file:README.md`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Resources = args
			req.Checkout = g.Repo
			if err := env.check(g); err != nil {
				return err
			}
			held, err := tok.forHolder(req.Holder, true)
			if err != nil {
				return err
			}
			req.Token = held.token
			req.Cwd, _ = os.Getwd()
			svc, err := g.openAdmission(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			res, err := svc.Acquire(cmd.Context(), req)
			if err != nil {
				return err
			}
			g.warn(res.Warnings)
			if env {
				writeEnv(g.Stdout, res.Ports, res.Token)
				return nil
			}
			return g.emit(res, func(w io.Writer) { renderAcquired(w, res, req.Holder, held) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Holder, "holder", "", "who holds the leases (a task id, an agent name)")
	f.DurationVar(&req.TTL, "ttl", 0, "lifetime of the leases (default 10m)")
	defaultInUsage(f, "ttl")
	f.IntVar(&req.OwnerPID, "owner-pid", 0, "a process whose life marks the leases in use: it may renew and release them; its proven death makes them recoverable")
	f.IntVar(&req.OwnerPID, "pid", 0, "alias of --owner-pid")
	tok.register(f)
	f.BoolVar((*bool)(&env), "env", false, "print only MAJLIS_PORT=... lines (and a generated MAJLIS_LEASE_TOKEN) for eval or an env file")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}

// renderAcquired prints an acquire's result for people: the leases
// granted (or replayed), the ports, and the token when it was made.
func renderAcquired(w io.Writer, res *admission.AcquireResult, holder string, held heldToken) {
	notes := map[string]string{}
	for _, id := range res.Reused {
		notes[id] = "already held"
	}
	if res.Replayed {
		fmt.Fprintf(w, "request %s was carried out before; its leases as recorded then (nothing new granted):\n", res.RequestID)
	} else {
		fmt.Fprintf(w, "granted %s to %s:\n", plural(len(res.Leases), "lease", "leases"), holder)
	}
	renderGrant(w, res.Leases, notes, res.Ports, res.Token)
	if held.created {
		fmt.Fprintf(w, "lease token kept in %s (mode 0600): renew and release need it\n", humanPath(held.file))
	}
}

// renderGrant prints leases just granted, the ports among them, and the
// token when it was generated (shown this once).
func renderGrant(w io.Writer, leases []admission.Lease, notes map[string]string, ports []int, token string) {
	renderLeases(w, leases, false, notes)
	for _, l := range portEnv(ports) {
		fmt.Fprintln(w, l)
	}
	if token != "" {
		fmt.Fprintf(w, "lease token (shown once; renew and release need it): %s\n", token)
	}
}
