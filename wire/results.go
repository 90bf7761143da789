package wire

import "time"

// The results of the API: the objects the command line prints with
// --json, each named by its one key ({"workspace": ...}). The client
// returns what they hold.

// WorkspaceResponse is {"workspace": WORKSPACE}.
type WorkspaceResponse struct {
	Workspace *Workspace `json:"workspace"`
}

// WorkspacesResponse is {"workspaces": [WORKSPACE...], "summary": {...}}.
type WorkspacesResponse struct {
	Workspaces []*Workspace   `json:"workspaces"`
	Summary    map[string]int `json:"summary"`
}

// SalvageResponse is {"salvage": {...}}.
type SalvageResponse struct {
	Salvage *SalvageResult `json:"salvage"`
}

// PreviewResponse is {"preview": {...}}.
type PreviewResponse struct {
	Preview *Preview `json:"preview"`
}

// ReclaimResponse is {"reclaim": {...}}.
type ReclaimResponse struct {
	Reclaim *ReclaimResult `json:"reclaim"`
}

// RestoreResponse is {"restore": {...}}, or {"workspace": WORKSPACE} for
// a restore from the trash.
type RestoreResponse struct {
	Restore   *RestoreResult `json:"restore,omitempty"`
	Workspace *Workspace     `json:"workspace,omitempty"`
}

// RecoveredResponse is {"recovered": RECORD}: the reclaim reservation
// that a recover retired.
type RecoveredResponse struct {
	Recovered *ReservationRecord `json:"recovered"`
}

// LeasesResponse is {"leases": [LEASE...]}.
type LeasesResponse struct {
	Leases []Lease `json:"leases"`
}

// LeaseResponse is {"lease": LEASE}.
type LeaseResponse struct {
	Lease *Lease `json:"lease"`
}

// EndResponse is {"end": {...}}.
type EndResponse struct {
	End *Ended `json:"end"`
}

// Ended says what end did: the object 'majlis end --json' prints.
type Ended struct {
	Binding      string         `json:"binding"`
	Leases       []Lease        `json:"leases"`    // released now
	Workspace    *Workspace     `json:"workspace"` // null: the task has no workspace (begun shared, or reclaimed)
	Reclaimed    *ReclaimResult `json:"reclaimed,omitempty"`
	Preview      *Preview       `json:"preview,omitempty"`
	NotReclaimed *Refusal       `json:"not_reclaimed,omitempty"`
}

// HeartbeatResponse is {"heartbeat": {...}}.
type HeartbeatResponse struct {
	Heartbeat *Heartbeat `json:"heartbeat"`
}

// Heartbeat is what a heartbeat did.
type Heartbeat struct {
	Holder   string    `json:"holder"`
	Leases   []Lease   `json:"leases"` // renewed now
	Warnings []Warning `json:"warnings"`
	TTL      string    `json:"ttl"`   // each renewal's lifetime
	Grace    string    `json:"grace"` // renewal stops this long after the last heartbeat
	// RenewUntil is when renewal stops unless another heartbeat comes.
	RenewUntil time.Time `json:"renew_until"`
}

// Repository is what init reports: {"repository": {...}}.
type Repository struct {
	ID            string `json:"id"`
	CommonDir     string `json:"common_dir"`
	StateDir      string `json:"state_dir"`
	WorkspaceRoot string `json:"workspace_root"`
}
