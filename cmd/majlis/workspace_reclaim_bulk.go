package main

import (
	"fmt"
	"io"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
	"github.com/spf13/cobra"
)

// runBulkReclaim is workspace reclaim --released / --dead: one preview
// with one digest over the set, or the reclaim of exactly that set.
func runBulkReclaim(cmd *cobra.Command, g *globalOptions, p *provider.Provider, sel string, preview bool, opts provider.ReclaimOptions) error {
	ctx := cmd.Context()
	if preview {
		bp, err := p.PreviewBulkReclaim(ctx, sel)
		if err != nil {
			return err
		}
		out := bulkPreviewBody{Digest: bp.Digest, Select: bp.Select, Workspaces: []bulkPreviewItem{}}
		for _, it := range bp.Workspaces {
			item := bulkPreviewItem{Binding: it.Binding, Preview: it.Preview}
			if it.Refused != nil {
				item.Refused = errorObject(it.Refused)
			}
			out.Workspaces = append(out.Workspaces, item)
		}
		return g.emit(bulkPreviewJSON{BulkPreview: out}, func(w io.Writer) {
			if len(bp.Workspaces) == 0 {
				fmt.Fprintf(w, "no %s workspaces to reclaim\n", sel)
			}
			for _, it := range bp.Workspaces {
				if it.Preview == nil {
					fmt.Fprintf(w, "== %s: left alone, a reclaim refuses now: %v\n", it.Binding, it.Refused)
					continue
				}
				fmt.Fprintf(w, "== %s\n", it.Binding)
				renderPreview(w, it.Preview)
			}
			// The digest alone on its line: a command line with it would
			// not fit 100 columns, and a wrapped one cannot be copied.
			fmt.Fprintf(w, "\n%d %s workspaces; digest of the whole set:\n  %s\n", len(bp.Workspaces), sel, bp.Digest)
			fmt.Fprintf(w, "confirm with: majlis workspace reclaim --%s --confirm DIGEST\n", sel)
		})
	}
	generated := opts.RequestID == ""
	if generated {
		opts.RequestID = newRequestID("reclaim-" + sel)
	}
	res, err := p.BulkReclaim(ctx, provider.BulkOptions{Select: sel, Confirm: opts.Confirm,
		SalvageSubmodules: opts.SalvageSubmodules, KeepTrash: opts.KeepTrash, DeleteTrash: opts.DeleteTrash, RequestID: opts.RequestID})
	if err != nil {
		return withRequestID(err, opts.RequestID, generated)
	}
	out := bulkReclaimBody{Digest: res.Digest, Failed: res.Failed, Reclaimed: res.Reclaimed, RequestID: res.RequestID,
		Select: res.Select, Workspaces: []bulkReclaimLine{}}
	var first error
	for _, it := range res.Workspaces {
		line := bulkReclaimLine{Binding: it.Binding, Status: "reclaimed", Result: it.Result}
		if it.Err != nil {
			line.Status, line.Error, line.Result = "refused", errorObject(it.Err), nil
			if first == nil {
				first = it.Err
			}
		}
		out.Workspaces = append(out.Workspaces, line)
	}
	if err := g.emit(bulkReclaimJSON{BulkReclaim: out}, func(w io.Writer) {
		for _, it := range res.Workspaces {
			if it.Err != nil {
				fmt.Fprintf(w, "%s: not reclaimed: %v\n", it.Binding, it.Err)
				continue
			}
			renderReclaim(w, it.Result)
		}
		fmt.Fprintf(w, "%d reclaimed, %d not\n", res.Reclaimed, res.Failed)
	}); err != nil {
		return err
	}
	g.purgeAfter(ctx, p)
	if first != nil {
		return &resultError{code: classify(wire.SurfaceCLI, first).ExitCode, err: first}
	}
	return nil
}
