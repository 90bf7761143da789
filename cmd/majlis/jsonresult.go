package main

import (
	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/cmd/majlis/internal/githook"
	"github.com/majlis-dev/majlis/provider"
	"github.com/majlis-dev/majlis/reservation"
	"github.com/majlis-dev/majlis/serverctl"
)

// The JSON envelope of every command's result, and of a failure: the
// object --json prints on stdout (docs/cli.md). Keys are the contract:
// only ever add one. testdata/golden/*.json pin them (golden_test.go).
//
// Commands whose result is already one library type print it as it is:
// begin (provider.BeginResult), workspace allocate (provider.AllocateResult),
// lease acquire (admission.AcquireResult), lease renew
// (admission.RenewResult), lease release (admission.ReleaseResult), check
// (provider.CheckResult), server start and attach (serverctl.StartResult),
// server stop (serverctl.StopResult).

// initJSON is the result of init.
type initJSON struct {
	Repository *provider.Repository `json:"repository"`
}

// workspaceJSON is the result of workspace show, release and restore
// --from-trash.
type workspaceJSON struct {
	Workspace *provider.Workspace `json:"workspace"`
	// BindingFrom is "current_directory" when the binding was taken
	// from the working directory (binding_cwd.go).
	BindingFrom string `json:"binding_from,omitempty"`
}

// workspacesJSON is the result of workspace list: the workspaces and
// their totals (workspace_list.go).
type workspacesJSON struct {
	Workspaces []*provider.Workspace `json:"workspaces"`
	Summary    map[string]int        `json:"summary"`
}

// salvageJSON is the result of workspace salvage.
type salvageJSON struct {
	Salvage *provider.SalvageResult `json:"salvage"`
	// BindingFrom is "current_directory" when the binding was taken
	// from the working directory (binding_cwd.go).
	BindingFrom string `json:"binding_from,omitempty"`
}

// previewJSON is the result of workspace reclaim --preview.
type previewJSON struct {
	Preview *provider.Preview `json:"preview"`
	// BindingFrom is "current_directory" when the binding was taken
	// from the working directory (binding_cwd.go).
	BindingFrom string `json:"binding_from,omitempty"`
}

// reclaimJSON is the result of workspace reclaim --confirm or --yes.
type reclaimJSON struct {
	Reclaim *provider.ReclaimResult `json:"reclaim"`
	// BindingFrom is "current_directory" when the binding was taken
	// from the working directory (binding_cwd.go).
	BindingFrom string `json:"binding_from,omitempty"`
}

// restoreJSON is the result of workspace restore.
type restoreJSON struct {
	Restore *provider.RestoreResult `json:"restore"`
}

// recoveredJSON is the result of workspace recover: the reservation
// record it retired.
type recoveredJSON struct {
	Recovered *reservation.Record `json:"recovered"`
}

// leasesJSON is the result of lease list.
type leasesJSON struct {
	Leases []admission.Lease `json:"leases"`
}

// leaseJSON is the result of lease resolve.
type leaseJSON struct {
	Lease *admission.Lease `json:"lease"`
}

// policyJSON is the result of policy show and policy set.
type policyJSON struct {
	Policy *provider.PolicyView `json:"policy"`
	// Sources says where each value comes from: default, repository or
	// shared (the coordination cluster's, alike for every clone).
	Sources map[string]string `json:"sources"`
	// Shared names the coordination cluster and the repository key, when
	// one is configured; Clones lists the live clones that share the key.
	Shared string                  `json:"shared,omitempty"`
	Clones []admission.SharedClone `json:"clones"`
}

func newPolicyJSON(p *provider.PolicyView) policyJSON {
	return policyJSON{Policy: p, Sources: p.Sources, Shared: p.Shared, Clones: p.Clones}
}

// hookJSON is the result of hook install.
type hookJSON struct {
	Hook *githook.Result `json:"hook"`
}

// doctorJSON is the result of doctor.
type doctorJSON struct {
	Doctor *provider.DoctorReport `json:"doctor"`
}

// repairJSON is the result of doctor --repair.
type repairJSON struct {
	Repair *provider.RepairResult `json:"repair"`
}

// versionJSON is the result of version.
type versionJSON struct {
	Version versionInfo `json:"version"`
}

// failpointsJSON is the result of debug failpoints.
type failpointsJSON struct {
	Enabled    bool     `json:"enabled"`
	Failpoints []string `json:"failpoints"`
}

// serverJSON is the result of server status (running).
type serverJSON struct {
	Server *serverctl.Status `json:"server"`
}

// stoppedJSON is the result of serve, once the server stopped.
type stoppedJSON struct {
	Stopped bool `json:"stopped"`
}

// errorJSON is the envelope of every failure.
type errorJSON struct {
	Error errorBody `json:"error"`
}

// errorBody is a failure: its stable code, the message for people, and its
// facts (never null: {} when there are none).
type errorBody struct {
	Code    string         `json:"code"`
	Details map[string]any `json:"details"`
	Message string         `json:"message"`
}
