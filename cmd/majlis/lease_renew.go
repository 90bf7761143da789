package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseRenewCmd(g *globalOptions) *cobra.Command {
	var req admission.RenewRequest
	var tok tokenFlag
	cmd := &cobra.Command{
		Use:   "renew --holder H [LEASE_ID...]",
		Short: "Extend the holder's active leases",
		Long: `Extend leases of the holder to now + --ttl (default 10m). Without LEASE_IDs,
every active lease of the holder in this repository (and its host leases
acquired from it) is renewed, and quarantined ones are reported as warnings.

Only active leases can be renewed: a quarantined lease refuses (exit 3,
quarantined; expiry does not prove the writer stopped, so the holder must
release it and acquire again), another holder's lease refuses (exit 3,
not_holder), and a released or unknown one is not found (exit 5). Every named
lease is checked before any is renewed.

A lease granted with a lease token is renewed only with it (--token-file F or
$MAJLIS_LEASE_TOKEN), from its owner process (--owner-pid at acquire) or one
of its descendants, or with --force, which the ledger records with who forced
it; otherwise exit 3, token_required.`,
		Example: `  majlis lease renew --holder agent-1
  majlis lease renew --holder agent-1 --ttl 30m L-3f9a0c1d2e4b5a69 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.IDs = args
			var err error
			if req.Token, err = tok.holderToken(req.Holder); err != nil {
				return err
			}
			svc, err := g.openAdmission(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			res, err := svc.Renew(cmd.Context(), req)
			if err != nil {
				return err
			}
			g.warn(res.Warnings)
			return g.emit(res, func(w io.Writer) {
				if res.Replayed {
					fmt.Fprintf(w, "request %s was carried out before; its leases as recorded then:\n", res.RequestID)
				} else {
					fmt.Fprintf(w, "renewed %s of %s:\n", plural(len(res.Leases), "lease", "leases"), req.Holder)
				}
				renderLeases(w, res.Leases, false, nil)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Holder, "holder", "", "whose leases to renew")
	f.DurationVar(&req.TTL, "ttl", 0, "new lifetime, from now (default 10m)")
	defaultInUsage(f, "ttl")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	f.BoolVar(&req.Force, "force", false, "act without the lease token (recorded in the event log, shown by 'majlis lease list')")
	tok.register(f)
	return cmd
}
