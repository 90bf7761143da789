package provider

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Temporary files in the state folder: doctor reports those no process
// holds (old enough, lock free), and --repair removes exactly those; a
// file a live writer holds, a young one, and one inside a folder majlis
// keeps whole stay.
func TestDoctorStrayTemporaryFiles(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	old := time.Now().Add(-2 * strayTempAge)
	mk := func(rel string, age bool) string {
		t.Helper()
		path := filepath.Join(p.stateDir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if age {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	strayIndex := mk(".claims.index-1234.tmp", true)
	strayClaim := mk(filepath.Join("claims", "T-1", ".000002.claim.0123456789abcdef.tmp"), true)
	held := mk(filepath.Join("requests", ".x.request.0123456789abcdef.tmp"), true)
	young := mk(".repository.json.0123456789abcdef.tmp", false)
	kept := mk(filepath.Join("damaged", "T-9.20260101T000000Z", ".000001.claim.0123456789abcdef.tmp"), true)
	// A writer in this process holds the lock of one (flock conflicts
	// between two open files of one process as between two processes).
	f, err := os.Open(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, f := range rep.Findings {
		if f.Code != FindingTempStray {
			t.Errorf("unexpected finding %+v", f)
			continue
		}
		if !f.Repair || f.Severity != SeverityWarning || f.Fix == "" {
			t.Errorf("finding %+v: want a repairable warning with a fix", f)
		}
		reported = append(reported, f.Path)
	}
	want := []string{strayIndex, strayClaim}
	slices.Sort(want)
	if !slices.Equal(reported, want) {
		t.Fatalf("doctor reported %v, want %v", reported, want)
	}
	pv, err := p.Repair(t.Context(), RepairOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, a := range pv.Actions {
		if a.Kind == RepairRemoveTemp {
			planned = append(planned, a.Path)
		}
	}
	if !slices.Equal(planned, want) || len(pv.Actions) != len(want) {
		t.Fatalf("repair preview %+v, want remove_temp of %v", pv.Actions, want)
	}
	// A stray file a writer takes meanwhile makes the plan stale.
	g, err := os.Open(strayClaim)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(g.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Repair(t.Context(), RepairOptions{Confirm: pv.Digest}); err == nil {
		t.Fatal("the repair removed a temporary file a writer held since the preview")
	}
	// Unlocked before it is closed: a child another test forks meanwhile
	// shares the open file until it execs.
	unix.Flock(int(g.Fd()), unix.LOCK_UN)
	g.Close()
	if _, err := os.Lstat(strayClaim); err != nil {
		t.Fatalf("the held file is gone: %v", err)
	}
	pv, err = p.Repair(t.Context(), RepairOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Repair(t.Context(), RepairOptions{Confirm: pv.Digest}); err != nil {
		t.Fatal(err)
	}
	for _, path := range want {
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the repair: %v", path, err)
		}
	}
	for _, path := range []string{held, young, kept} {
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("%s was removed: %v", path, err)
		}
	}
	if rep, err := p.Doctor(t.Context()); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("doctor after the repair: %+v, %v", rep, err)
	}
}
