package provider

// Crash tests of issue 24's edges, driving the failpoints build of the
// binary as reclaim_crash_test.go does: what doctor says of an interrupted
// reclaim, and what a retry does.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
)

// doctorFindings runs `majlis doctor --json` and returns its findings.
func doctorFindings(t *testing.T, bin, dir string) []Finding {
	t.Helper()
	r := crashExec(t, bin, dir, nil, "doctor", "--json")
	if r.exit != 0 {
		t.Fatalf("doctor failed\n%s", r)
	}
	var out struct {
		Doctor DoctorReport `json:"doctor"`
	}
	r.decode(t, &out)
	return out.Doctor.Findings
}

// TestDoctorNamesAnInterruptedReclaim: a reclaim killed with the
// workspace in its trash folder, or with the trash deleted and the end not
// recorded. doctor names the trash folder, the request id and the command
// that finishes the reclaim (not "the directory is gone"); that command,
// run as doctor words it, finishes the reclaim with the work on a salvage
// ref, and doctor then finds nothing of it.
func TestDoctorNamesAnInterruptedReclaim(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, point := range []string{"reclaim/repaired", "reclaim/removed"} {
		t.Run(strings.TrimPrefix(point, "reclaim/"), func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			ttl := []string{envvar.ReservationTTL + "=2s"}
			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"="+point+"=crash"),
				"workspace", "reclaim", "T-1", "--yes", "--request-id", "R-9", "--json")
			if !crash.killed {
				t.Fatalf("the reclaim was not killed at %s\n%s", point, crash)
			}
			trash := s.p.reg.WorkspaceRoot + "/" + trashPrefix + "T-1.1."
			var found *Finding
			for _, f := range doctorFindings(t, bin, s.repo.Dir) {
				if f.Binding != "T-1" {
					continue
				}
				if f.Code != FindingReclaimInterrupted || found != nil {
					t.Errorf("doctor finds %+v", f)
					continue
				}
				found = &f
			}
			if found == nil {
				t.Fatalf("doctor does not report T-1's interrupted reclaim")
			}
			fix := "majlis workspace reclaim T-1 --yes --request-id R-9"
			if !strings.HasPrefix(found.Path, trash) || !strings.Contains(found.Message, found.Path) ||
				!strings.Contains(found.Message, "R-9") || !strings.HasPrefix(found.Fix, fix) {
				t.Errorf("doctor's finding %+v: want the trash folder %s*, request R-9 and the command %q", *found, trash, fix)
			}
			if point == "reclaim/repaired" && !strings.Contains(found.Message, "waiting in its trash folder") {
				t.Errorf("doctor's finding %q does not say the workspace waits in its trash folder", found.Message)
			}
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatal(err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			args := append(strings.Fields(strings.TrimPrefix(fix, "majlis ")), "--json")
			if r := crashExec(t, bin, s.repo.Dir, ttl, args...); r.exit != 0 {
				t.Fatalf("doctor's command did not finish the reclaim\n%s", r)
			}
			s.checkWorkPreserved(t)
			if left, _ := filepath.Glob(trash + "*"); len(left) > 0 {
				t.Errorf("trash left: %v", left)
			}
			for _, f := range doctorFindings(t, bin, s.repo.Dir) {
				if f.Binding == "T-1" {
					t.Errorf("after the reclaim doctor still finds %+v", f)
				}
			}
		})
	}
}
