package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"github.com/spf13/cobra"
)

const failpointsEnabled = failpoint.Enabled

func newDebugCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "debug",
		Short:   "Commands for testing and diagnosing majlis itself",
		Long:    "Commands for testing and diagnosing majlis itself. Their output is stable where docs/cli.md says so.",
		Example: `  majlis debug failpoints --json`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "failpoints",
		Short: "List the failpoint names this binary knows",
		Long: `List every failpoint name. Binaries built with -tags failpoints read
MAJLIS_FAILPOINTS="name=action;..." where action is crash, error, panic,
sleep(D) or wait(PATH) (create PATH.reached, then pause until PATH exists);
a name or action it does not know is a usage error.`,
		Example: `  majlis debug failpoints --json
  MAJLIS_FAILPOINTS='allocate/claimed=crash' majlis-failpoints workspace allocate T-1`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			names := failpoint.Names()
			return g.emit(failpointsJSON{Failpoints: names, Enabled: failpoint.Enabled}, func(w io.Writer) {
				if !failpoint.Enabled {
					fmt.Fprintln(w, "(this binary was built without -tags failpoints; the names are listed but never fire)")
				}
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
			})
		},
	})
	return cmd
}
