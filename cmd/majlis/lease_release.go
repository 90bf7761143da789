package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseReleaseCmd(g *globalOptions) *cobra.Command {
	var req admission.ReleaseRequest
	cmd := &cobra.Command{
		Use:   "release --holder H [LEASE_ID...]",
		Short: "Give leases back (this also lifts their quarantine)",
		Long: `Release leases of the holder: active and quarantined ones alike, which lifts
a quarantine (the holder itself says its writer is done). Without LEASE_IDs,
every lease of the holder in this repository (and its host leases acquired
from it) is released. Releasing a lease twice is harmless; another holder's
lease refuses (exit 3, not_holder), an unknown one is not found (exit 5).`,
		Example: `  majlis lease release --holder agent-1
  majlis lease release --holder agent-1 L-3f9a0c1d2e4b5a69 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			req.IDs = args
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
					fmt.Fprintf(w, "%s holds no leases here; nothing released\n", req.Holder)
					return
				}
				fmt.Fprintf(w, "released %s of %s:\n", plural(len(res.Leases), "lease", "leases"), req.Holder)
				renderLeases(w, res.Leases, false, nil)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Holder, "holder", "", "whose leases to release")
	f.StringVar(&req.RequestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
