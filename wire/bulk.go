package wire

// A bulk reclaim takes back, in one preview with one digest and one
// confirmation, every released workspace (select "released") or every
// workspace whose recorded owner process is proven dead (select "dead"):
// 'majlis workspace reclaim --released|--dead'. Each workspace is
// reclaimed with all of a reclaim's checks, against its own preview as
// the bulk preview showed it; one a reclaim would refuse now is named with
// its refusal and left alone.

// The selections of a bulk reclaim.
const (
	SelectReleased = "released"
	SelectDead     = "dead"
)

// BulkPreviewRequest is 'majlis workspace reclaim --released|--dead --preview'.
type BulkPreviewRequest struct {
	Select string `json:"select" jsonschema:"which workspaces: released (their task handed them back) or dead (their owner process is proven dead)"`
}

// BulkReclaimRequest is 'majlis workspace reclaim --released|--dead --confirm DIGEST'.
type BulkReclaimRequest struct {
	Select            string `json:"select" jsonschema:"the selection previewed: released or dead"`
	Confirm           string `json:"confirm" jsonschema:"the digest of the bulk preview (sha256:...): the set is reclaimed only if it is still what was previewed"`
	SalvageSubmodules bool   `json:"salvage_submodules,omitempty" jsonschema:"salvage dirty submodules too, instead of refusing"`
	KeepTrash         string `json:"keep_trash,omitempty" jsonschema:"keep each moved workspace in its trash folder this long (a Go duration; 0 deletes it at once) instead of the policy's trash.keep (default 24h)"`
	RequestID         string `json:"request_id,omitempty" jsonschema:"idempotency key: a retry with it finishes the set the first attempt confirmed"`
}

// A BulkPreview is what a bulk reclaim would do. Its digest covers the
// selection, every workspace's preview digest and every refusal.
type BulkPreview struct {
	Digest     string            `json:"digest"`
	Select     string            `json:"select"`
	Workspaces []BulkPreviewItem `json:"workspaces"`
}

// A BulkPreviewItem is one workspace of a bulk preview: its reclaim
// preview, or the refusal a reclaim of it meets now (it is left alone).
type BulkPreviewItem struct {
	Binding string   `json:"binding"`
	Preview *Preview `json:"preview,omitempty"`
	Refused *Refusal `json:"refused,omitempty"`
}

// A BulkReclaim reports a bulk reclaim: one line per workspace of the set.
type BulkReclaim struct {
	Digest     string            `json:"digest"`
	Failed     int               `json:"failed"`
	Reclaimed  int               `json:"reclaimed"`
	RequestID  string            `json:"request_id"`
	Select     string            `json:"select"`
	Workspaces []BulkReclaimLine `json:"workspaces"`
}

// A BulkReclaimLine is one workspace of a bulk reclaim: reclaimed with
// its result, or refused with its error.
type BulkReclaimLine struct {
	Binding string         `json:"binding"`
	Error   *Refusal       `json:"error,omitempty"`
	Result  *ReclaimResult `json:"result,omitempty"`
	Status  string         `json:"status"` // reclaimed or refused
}

// BulkPreviewResponse is {"bulk_preview": {...}}.
type BulkPreviewResponse struct {
	BulkPreview *BulkPreview `json:"bulk_preview"`
}

// BulkReclaimResponse is {"bulk_reclaim": {...}}.
type BulkReclaimResponse struct {
	BulkReclaim *BulkReclaim `json:"bulk_reclaim"`
}
