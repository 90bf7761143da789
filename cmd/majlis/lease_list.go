package main

import (
	"fmt"
	"io"
	"time"

	"github.com/majlis-dev/majlis/admission"
	"github.com/spf13/cobra"
)

func newLeaseListCmd(g *globalOptions) *cobra.Command {
	var req admission.ListRequest
	cmd := &cobra.Command{
		Use:   "list [--holder H] [--all]",
		Short: "List the repository's leases and the machine's host leases",
		Long: `List the leases of this repository (every worktree of it) and the host
singletons of the machine, oldest first, with their state: active, quarantined
(expired without release: still blocking), pending (a host lease whose
admission has not finished); with --all also released and resolved ones.
Listing changes nothing.`,
		Example: `  majlis lease list
  majlis lease list --holder agent-1 --json | jq -r '.leases[] | select(.state=="quarantined") | .id'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := g.openAdmission(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			leases, err := svc.List(cmd.Context(), req)
			if err != nil {
				return err
			}
			return g.emit(leasesJSON{Leases: leases}, func(w io.Writer) {
				if len(leases) == 0 {
					fmt.Fprintln(w, "no leases (acquire one with: majlis lease acquire --holder H RESOURCE)")
					return
				}
				notes := map[string]string{}
				for _, l := range leases {
					if f := l.Forced; f != nil {
						notes[l.ID] = fmt.Sprintf("%s forced by %s, pid %d, at %s", f.Op, f.User, f.By.PID, f.At.Format(time.RFC3339))
					}
				}
				renderLeases(w, leases, true, notes)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Holder, "holder", "", "only this holder's leases")
	f.BoolVar(&req.All, "all", false, "include released and resolved leases")
	return cmd
}
