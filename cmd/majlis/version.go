package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time (-ldflags "-X main.version=...") for releases.
var version = "0.1.0-dev"

type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
	Modified  bool   `json:"modified"`
	Failpoint bool   `json:"failpoints"`
}

func newVersionCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the majlis version",
		Long:  "Print the version of majlis, the commit it was built from and the Go toolchain.",
		Example: `  majlis version
  majlis version --json | jq -r .version.version`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			return g.emit(versionJSON{Version: v}, func(w io.Writer) {
				fmt.Fprintf(w, "majlis %s (%s, %s", v.Version, v.Go, v.Platform)
				if v.Commit != "" {
					fmt.Fprintf(w, ", commit %.12s", v.Commit)
					if v.Modified {
						fmt.Fprint(w, "+dirty")
					}
				}
				if v.Failpoint {
					fmt.Fprint(w, ", failpoints")
				}
				fmt.Fprintln(w, ")")
			})
		},
	}
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Failpoint: failpointsEnabled}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

// usageArgs marks argument-count errors as usage errors (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}
