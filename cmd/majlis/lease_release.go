package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseReleaseCmd(g *globalOptions) *cobra.Command {
	var req admission.ReleaseRequest
	var tok tokenFlag
	cmd := &cobra.Command{
		Use:   "release --holder H [LEASE_ID...]",
		Short: "Give leases back (this also lifts their quarantine)",
		Long: `Release leases of the holder: active and quarantined ones alike, which lifts
a quarantine (the holder itself says its writer is done). Without LEASE_IDs,
every lease of the holder in this repository (and its host leases acquired
from it) is released. Releasing a lease twice, or for a holder with nothing
to release, is harmless (exit 0, "released: 0"); another holder's
lease refuses (exit 3, not_holder), an unknown one is not found (exit 5).

A lease granted with a lease token is released only with it (--token-file F
or $MAJLIS_LEASE_TOKEN), from its owner process (--owner-pid at acquire) or
one of its descendants, or by anyone once that owner process is proven dead;
otherwise only --force does it, and the ledger records who forced it (event
"force"; 'majlis lease list --all' shows "forced"). Without these, exit 3,
token_required. Leases granted before lease tokens existed need none.`,
		Example: `  majlis lease release --holder agent-1
  majlis lease release --holder agent-1 L-3f9a0c1d2e4b5a69 --json
  MAJLIS_LEASE_TOKEN=$(cat ~/.agent-1.token) majlis lease release --holder agent-1
  majlis lease release --holder agent-1 --force   # recorded`,
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
			res, err := svc.Release(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.emit(res, func(w io.Writer) {
				if len(res.Leases) == 0 {
					fmt.Fprintf(w, "released: 0 (%s holds no leases here)\n", req.Holder)
					return
				}
				fmt.Fprintf(w, "released: %s of %s\n", plural(len(res.Leases), "lease", "leases"), req.Holder)
				renderLeases(w, res.Leases, false, nil)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Holder, "holder", "", "whose leases to release")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	f.BoolVar(&req.Force, "force", false, "act without the lease token (recorded in the event log, shown by 'majlis lease list')")
	tok.register(f)
	return cmd
}
