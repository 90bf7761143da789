package client

import (
	"context"

	"github.com/majlis-dev/majlis/wire"
)

// PreviewBulk is 'majlis workspace reclaim --released|--dead --preview':
// every released workspace (wire.SelectReleased) or every workspace whose
// owner process is proven dead (wire.SelectDead), each with its reclaim
// preview (or the refusal a reclaim of it meets now), and one digest
// over the set. It changes nothing.
func (c *Client) PreviewBulk(ctx context.Context, sel string) (*wire.BulkPreview, error) {
	res, err := call[wire.BulkPreviewResponse](c, ctx, "POST", "/reclaim/preview", wire.BulkPreviewRequest{Select: sel})
	if err != nil {
		return nil, err
	}
	return res.BulkPreview, nil
}

// ReclaimBulk is 'majlis workspace reclaim --released|--dead --confirm
// DIGEST': the reclaim of exactly the set PreviewBulk showed, r.Confirm
// being its digest; if anything changed since, it refuses (preview_stale)
// and nothing happens. A workspace refused on its own is a line of the
// result with its error; the dead owners' leases are released as
// recovered (each result's RecoveredLeases).
func (c *Client) ReclaimBulk(ctx context.Context, r wire.BulkReclaimRequest) (*wire.BulkReclaim, error) {
	res, err := call[wire.BulkReclaimResponse](c, ctx, "POST", "/reclaim", r)
	if err != nil {
		return nil, err
	}
	return res.BulkReclaim, nil
}
