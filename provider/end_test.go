package provider

import (
	"errors"
	"testing"

	"github.com/majlis-dev/majlis/admission"
)

// A task begun shared has no workspace: End releases its leases and says
// there is none; again, it is harmless. A task that never held anything
// is not found, and nothing changes.
func TestEndShared(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	b := mustBegin(t, p, BeginOptions{Task: "S-1", Paths: []string{"docs/**"}, Shared: true})
	if b.Workspace != nil || len(b.Leases) != 1 {
		t.Fatalf("begin shared: %+v", b)
	}

	if _, err := p.End(t.Context(), EndOptions{Binding: "S-1"}); !errors.Is(err, admission.ErrTokenRequired) {
		t.Fatalf("end without the token: %v, want token_required", err)
	}
	res, err := p.End(t.Context(), EndOptions{Binding: "S-1", Token: b.Token, Reclaim: true})
	if err != nil {
		t.Fatalf("end shared: %v", err)
	}
	if res.Workspace != nil || res.Reclaimed != nil || res.Preview != nil || res.NotReclaimed != nil {
		t.Errorf("end shared: a workspace was acted on: %+v", res)
	}
	if len(res.Leases) != 1 || res.Leases[0].ID != b.Leases[0].ID || res.Leases[0].State != admission.StateReleased {
		t.Errorf("end shared released %+v, want %s", res.Leases, b.Leases[0].ID)
	}
	svc := openAdmission(t, p)
	if ls, err := svc.List(t.Context(), admission.ListRequest{Holder: "S-1"}); err != nil || len(ls) != 0 {
		t.Fatalf("S-1 still holds %v (%v)", ls, err)
	}
	again, err := p.End(t.Context(), EndOptions{Binding: "S-1"})
	if err != nil || again.Workspace != nil || len(again.Leases) != 0 {
		t.Fatalf("ending S-1 again: %+v, %v", again, err)
	}

	// Another task's leases are not touched by an unknown task's end.
	other := mustBegin(t, p, BeginOptions{Task: "S-2", Paths: []string{"src/**"}, Shared: true})
	_, err = p.End(t.Context(), EndOptions{Binding: "S-9", Force: true})
	var pe *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &pe) || pe.Details["not_found"] != "workspace" {
		t.Fatalf("end of a task that never was: %v, want not_found", err)
	}
	if ls, _ := svc.List(t.Context(), admission.ListRequest{Holder: "S-2"}); len(ls) != 1 || ls[0].ID != other.Leases[0].ID {
		t.Fatalf("S-2's leases after an unknown end: %v", ls)
	}
}

// A task with a workspace ends as before: leases, then the workspace,
// whose files stay.
func TestEndWorkspace(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	b := mustBegin(t, p, BeginOptions{Task: "T-1", Paths: []string{"src/**"}})
	res, err := p.End(t.Context(), EndOptions{Binding: "T-1", Token: b.Token})
	if err != nil {
		t.Fatal(err)
	}
	if res.Workspace == nil || res.Workspace.State != StateReleased || len(res.Leases) != 1 {
		t.Fatalf("end: %+v", res)
	}
}
