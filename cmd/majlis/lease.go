package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Acquire, renew, release, list and resolve leases",
		Long: `A lease is permission for a resource: a holder, a generation that grows with
every grant of the resource, and an expiry. Resources are named by scope:

  file:PATH       an exact file in one checkout (the main worktree or a linked one)
  intent:PATH     a repository path the holder will touch, advertised to every
  intent:DIR/**   worktree: a literal path, or the subtree below DIR
  host:NAME       a machine-wide singleton, such as host:port:3000

A set of leases is granted all or none. What a conflict gets (allow, warn or
block) is decided by the repository's policy ('majlis policy show'). A lease
that expires without being released is quarantined: expiry does not prove the
writer stopped, so its resource stays blocked until the holder releases it or
'majlis lease resolve ID --writer-stopped' attests that the writer is gone.`,
		Example: `  majlis lease acquire --holder agent-1 file:src/auth/session.go host:port:3000
  majlis lease list
  majlis lease release --holder agent-1`,
	}
	cmd.AddCommand(
		newLeaseAcquireCmd(g),
		newLeaseRenewCmd(g),
		newLeaseReleaseCmd(g),
		newLeaseListCmd(g),
		newLeaseResolveCmd(g),
	)
	return cmd
}

// openAdmission opens the admission ledgers of the registered repository
// named by --repo (default: the working directory's).
func (g *globalOptions) openAdmission(ctx context.Context) (*admission.Service, error) {
	p, err := g.openProvider(ctx)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Admission(ctx)
}

// warn prints warnings to stderr, for people; with --json they are part
// of the result object instead.
func (g *globalOptions) warn(ws []admission.Warning) {
	if g.JSON {
		return
	}
	for _, w := range ws {
		fmt.Fprintf(g.Stderr, "majlis: warning: %s\n", w.Message)
	}
}

// renderLeases prints leases as an aligned table. notes adds a remark to
// the leases it names.
func renderLeases(w io.Writer, leases []admission.Lease, checkout bool, notes map[string]string) {
	tw := table(w)
	header := "ID\tRESOURCE\tHOLDER\tGEN\tSTATE\tEXPIRES"
	if checkout {
		header += "\tCHECKOUT"
	}
	fmt.Fprintln(tw, header)
	for _, l := range leases {
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s", l.ID, l.Resource, l.Holder, l.Generation, l.State, l.ExpiresAt.Format(time.RFC3339))
		if checkout {
			co := humanPath(l.Checkout)
			if co == "" {
				co = "(host)"
			}
			line += "\t" + co
		}
		if n := notes[l.ID]; n != "" {
			line += "\t(" + n + ")"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
