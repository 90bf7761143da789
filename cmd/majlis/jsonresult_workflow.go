package main

import (
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/provider"
)

// The JSON envelopes of bulk reclaim, end and gc (see jsonresult.go).

// bulkPreviewJSON is the result of workspace reclaim --released/--dead
// --preview.
type bulkPreviewJSON struct {
	BulkPreview bulkPreviewBody `json:"bulk_preview"`
}

type bulkPreviewBody struct {
	Digest     string            `json:"digest"`
	Select     string            `json:"select"`
	Workspaces []bulkPreviewItem `json:"workspaces"`
}

// bulkPreviewItem is one workspace of a bulk preview: its preview, or the
// refusal a reclaim of it meets now.
type bulkPreviewItem struct {
	Binding string            `json:"binding"`
	Preview *provider.Preview `json:"preview,omitempty"`
	Refused *errorBody        `json:"refused,omitempty"`
}

// bulkReclaimJSON is the result of workspace reclaim --released/--dead
// --confirm.
type bulkReclaimJSON struct {
	BulkReclaim bulkReclaimBody `json:"bulk_reclaim"`
}

type bulkReclaimBody struct {
	Digest     string            `json:"digest"`
	Failed     int               `json:"failed"`
	Reclaimed  int               `json:"reclaimed"`
	RequestID  string            `json:"request_id"`
	Select     string            `json:"select"`
	Workspaces []bulkReclaimLine `json:"workspaces"`
}

// bulkReclaimLine is one workspace of a bulk reclaim: reclaimed with its
// result, or refused with its error.
type bulkReclaimLine struct {
	Binding string                  `json:"binding"`
	Error   *errorBody              `json:"error,omitempty"`
	Result  *provider.ReclaimResult `json:"result,omitempty"`
	Status  string                  `json:"status"` // reclaimed or refused
}

// endJSON is the result of end.
type endJSON struct {
	End endBody `json:"end"`
}

type endBody struct {
	Binding      string                  `json:"binding"`
	Leases       []admission.Lease       `json:"leases"`
	Workspace    *provider.Workspace     `json:"workspace"`
	Reclaimed    *provider.ReclaimResult `json:"reclaimed,omitempty"`
	Preview      *provider.Preview       `json:"preview,omitempty"`
	NotReclaimed *errorBody              `json:"not_reclaimed,omitempty"`
	BindingFrom  string                  `json:"binding_from,omitempty"`
	// Ignored (with --reclaim): none, kept_in_trash or not_reclaimed.
	Ignored string `json:"ignored,omitempty"`
}

// gcPreviewJSON is the result of gc --preview.
type gcPreviewJSON struct {
	GCPreview *provider.GCPlan `json:"gc_preview"`
}

// gcJSON is the result of gc --confirm.
type gcJSON struct {
	GC *provider.GCResult `json:"gc"`
}

// errorObject is err as the JSON error object of a failure renders it
// (fail): code, message with the command line's hint, details.
func errorObject(err error) *errorBody {
	b, _ := failure(err)
	return &b
}
