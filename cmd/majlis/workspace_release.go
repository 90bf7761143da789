package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newWorkspaceReleaseCmd(g *globalOptions) *cobra.Command {
	var requestID string
	cmd := &cobra.Command{
		Use:   "release [BINDING]",
		Short: "Record that the workspace's holder is done (files stay)",
		Long: `Record that the holder of BINDING's workspace is done with it. Nothing is
deleted: the files stay until the workspace is reclaimed. Releasing twice is
harmless. Run inside a workspace without BINDING, it acts on that workspace and says so.`,
		Example: `  majlis workspace release T-14
  majlis workspace release T-14 --json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.openProvider(cmd.Context())
			if err != nil {
				return err
			}
			defer p.Close()
			binding, fromCwd, err := g.bindingOf(p, args)
			if err != nil {
				return err
			}
			ws, err := p.Release(cmd.Context(), binding, requestID)
			if err != nil {
				return err
			}
			return g.emit(workspaceJSON{Workspace: ws, BindingFrom: bindingFrom(fromCwd)}, func(w io.Writer) {
				fmt.Fprintf(w, "released %s; its files stay at %s until reclaimed\n", ws.Binding, humanPath(ws.Path))
			})
		},
	}
	cmd.Flags().StringVar(&requestID, "request-id", "", "idempotency key: a retry returns the recorded result")
	return cmd
}
