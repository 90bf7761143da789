package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/spf13/cobra"
)

func newDoctorCmd(g *globalOptions) *cobra.Command {
	var repair, preview, yes bool
	var confirm, requestID string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the majlis state of the repository, and repair what is provably safe",
		Long: `Check the repository's majlis state, changing nothing: every record in the
state folder decodes and verifies, the claims journal matches the claims, the
admission ledgers open and pass SQLite's quick_check, git's admin entries and
locks agree with the live workspaces, and no reservation is left by a dead
owner. Each finding has a stable code, a severity (error: majlis refuses
something because of it; warning: it works, more slowly or with something
left over) and what to run or do. "ok" is true when nothing was found; the
exit code is 0 either way.

--repair does only what is provably safe: rebuild the claims journal from
the claims (when they all verify), retire reservations whose owners are
proven dead and that expired, move a damaged record into
<state>/damaged/ after salvaging its workspace's work to a salvage ref, and
remove temporary files an interrupted write left (no process holds them).
--repair --preview lists the actions and a digest; --repair --confirm
DIGEST carries out exactly those (--yes: whatever the plan is now), each
re-checked immediately before it runs. docs/doctor.md describes every code.`,
		Example: `  majlis doctor
  majlis doctor --json | jq -r '.doctor.findings[] | "\(.code) \(.path)"'
  majlis doctor --repair --preview
  majlis doctor --repair --confirm sha256:4f1c...`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			changed := cmd.Flags().Changed
			if !repair && (preview || yes || changed("confirm")) {
				return &usageError{fmt.Errorf("--preview, --confirm and --yes go with --repair")}
			}
			if preview && (yes || changed("confirm")) || yes && changed("confirm") {
				return &usageError{fmt.Errorf("choose one of --preview, --confirm and --yes")}
			}
			if changed("confirm") {
				if err := provider.CheckDigest(confirm); err != nil {
					return &usageError{err}
				}
			}
			if !repair {
				popts, err := providerOptions()
				if err != nil {
					return err
				}
				rep, err := provider.Doctor(cmd.Context(), g.Repo, popts)
				if err != nil {
					return err
				}
				return g.emit(doctorJSON{Doctor: rep}, func(w io.Writer) { renderDoctor(w, rep) })
			}
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			res, err := p.Repair(cmd.Context(), provider.RepairOptions{Preview: preview, Confirm: confirm, Yes: yes, RequestID: requestID})
			if err != nil {
				return err
			}
			return g.emit(repairJSON{Repair: res}, func(w io.Writer) { renderRepair(w, res) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&repair, "repair", false, "repair what is provably safe (with --preview, --confirm or --yes)")
	f.BoolVar(&preview, "preview", false, "with --repair: list the actions and their digest; change nothing")
	f.StringVar(&confirm, "confirm", "", "with --repair: carry out the actions of the preview with this digest")
	f.BoolVar(&yes, "yes", false, "with --repair: carry out the actions planned now, without a digest")
	f.StringVar(&requestID, "request-id", "", "idempotency key: a retry of --repair returns the recorded result")
	return cmd
}

func renderDoctor(w io.Writer, rep *provider.DoctorReport) {
	renderDoctorFindings(w, rep)
	for _, k := range rep.Trash {
		fmt.Fprintf(w, "kept trash %s\n", keptLine(k))
	}
}

func renderDoctorFindings(w io.Writer, rep *provider.DoctorReport) {
	if rep.OK {
		fmt.Fprintf(w, "no problems found (checked %d areas of %s)\n", len(rep.Checked), rep.StateDir)
		return
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "%s %s: %s\n  fix: %s\n", f.Severity, f.Code, f.Message, f.Fix)
	}
}

func renderRepair(w io.Writer, res *provider.RepairResult) {
	if len(res.Actions) == 0 {
		fmt.Fprintln(w, "nothing to repair that is provably safe ('majlis doctor' lists what a person must look at)")
		return
	}
	if res.Preview {
		for _, a := range res.Actions {
			fmt.Fprintf(w, "%s: %s\n", a.Kind, a.Detail)
		}
		fmt.Fprintf(w, "digest %s\nrun: majlis doctor --repair --confirm %s\n", res.Digest, res.Digest)
		return
	}
	for _, d := range res.Done {
		fmt.Fprintf(w, "done %s %s", d.Kind, humanPath(d.Path))
		for _, r := range d.SalvageRefs {
			fmt.Fprintf(w, " (salvaged to %s)", r)
		}
		if d.MovedTo != "" {
			fmt.Fprintf(w, " -> %s", d.MovedTo)
		}
		fmt.Fprintln(w)
	}
}
