package server

import (
	"context"

	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/wire"
)

// bulkPreview is 'majlis workspace reclaim --released|--dead --preview':
// one preview with one digest over the selected set.
func (a *api) bulkPreview(ctx context.Context, q *wire.BulkPreviewRequest) (*wire.BulkPreviewResponse, error) {
	bp, err := a.s.p.PreviewBulkReclaim(ctx, q.Select)
	if err != nil {
		return nil, err
	}
	out := &wire.BulkPreview{Digest: bp.Digest, Select: bp.Select, Workspaces: []wire.BulkPreviewItem{}}
	for _, it := range bp.Workspaces {
		item := wire.BulkPreviewItem{Binding: it.Binding}
		if it.Preview != nil {
			item.Preview = &it.Preview.Preview
		}
		if it.Refused != nil {
			rf := a.refusal(it.Refused)
			item.Refused = &rf
		}
		out.Workspaces = append(out.Workspaces, item)
	}
	return &wire.BulkPreviewResponse{BulkPreview: out}, nil
}

// bulkReclaim is 'majlis workspace reclaim --released|--dead --confirm
// DIGEST': the reclaim of exactly the set the preview showed. A workspace
// refused on its own is a line of the result, not a failure of the call.
func (a *api) bulkReclaim(ctx context.Context, q *wire.BulkReclaimRequest) (*wire.BulkReclaimResponse, error) {
	keep, err := duration("keep_trash", q.KeepTrash)
	if err != nil {
		return nil, err
	}
	if q.Confirm == "" {
		return nil, &provider.Error{Op: "reclaim", Err: provider.ErrUnconfirmed,
			Reason: "no digest of a bulk preview (confirm) was given",
			Hint:   "ask for the bulk preview ({tool:workspace_reclaim_bulk_preview}), check it, and send its digest as confirm"}
	}
	if err := provider.CheckDigest(q.Confirm); err != nil {
		return nil, usage("confirm: %v", err)
	}
	res, err := a.s.p.BulkReclaim(ctx, provider.BulkOptions{Select: q.Select, Confirm: q.Confirm,
		SalvageSubmodules: q.SalvageSubmodules, KeepTrash: keep, DeleteTrash: q.KeepTrash != "" && keep == 0, RequestID: q.RequestID})
	if err != nil {
		return nil, err
	}
	out := &wire.BulkReclaim{Digest: res.Digest, Failed: res.Failed, Reclaimed: res.Reclaimed, RequestID: res.RequestID,
		Select: res.Select, Workspaces: []wire.BulkReclaimLine{}}
	for _, it := range res.Workspaces {
		line := wire.BulkReclaimLine{Binding: it.Binding, Status: "reclaimed", Result: it.Result}
		if it.Err != nil {
			rf := a.refusal(it.Err)
			line.Status, line.Error, line.Result = "refused", &rf, nil
		}
		out.Workspaces = append(out.Workspaces, line)
	}
	return &wire.BulkReclaimResponse{BulkReclaim: out}, nil
}
