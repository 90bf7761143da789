package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseResolveCmd(g *globalOptions) *cobra.Command {
	var req admission.ResolveRequest
	cmd := &cobra.Command{
		Use:   "resolve LEASE_ID --writer-stopped",
		Short: "Lift the quarantine of an expired lease whose writer has stopped",
		Long: `Lift the quarantine of LEASE_ID: a lease that expired without being
released. Expiry does not prove that its writer stopped, so majlis needs your
attestation: --writer-stopped says you checked that nothing writes under that
lease any more (without it: exit 2). Its resource can then be granted again.

An active, released or pending lease is not quarantined (exit 3,
not_quarantined); resolving a resolved lease again is harmless.`,
		Example: `  majlis lease resolve L-3f9a0c1d2e4b5a69 --writer-stopped
  majlis lease resolve L-3f9a0c1d2e4b5a69 --writer-stopped --json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.ID = args[0]
			svc, err := g.openAdmission(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			l, err := svc.Resolve(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.emit(leaseJSON{Lease: l}, func(w io.Writer) {
				fmt.Fprintf(w, "resolved %s (%s, held by %s): its resource can be granted again\n", l.ID, l.Resource, l.Holder)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&req.WriterStopped, "writer-stopped", false, "attest that the lease's writer has stopped")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
