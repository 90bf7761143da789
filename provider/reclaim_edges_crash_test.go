package provider

// Crash tests of issue 24's edges, driving the failpoints build of the
// binary as reclaim_crash_test.go does: what doctor says of an interrupted
// reclaim, and what a retry does.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
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

// TestReclaimKilledAfterItsRecord: a reclaim killed once it recorded its
// end (failpoint reclaim/recorded), before it recorded its result and
// released its reservation; the workspace present (moved, deleted), or its
// folder deleted by hand first. Once the reservation has expired,
// allocating the binding again is not refused as reserved (the dead
// reclaimer's reservation is recovered), and the retry with the request
// id returns the reclaim's result instead of not_found, touching nothing
// of a workspace allocated since; a second retry returns the same.
func TestReclaimKilledAfterItsRecord(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, tc := range []struct {
		name          string
		missing       bool // the folder deleted by hand before the reclaim
		allocateFirst bool // allocate again before the retry
	}{
		{"retry, then allocate", false, false},
		{"allocate, then retry", false, true},
		{"folder deleted by hand", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			if tc.missing {
				if err := os.RemoveAll(s.target.Path); err != nil {
					t.Fatal(err)
				}
			}
			ttl := []string{envvar.ReservationTTL + "=2s"}
			args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json"}
			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"=reclaim/recorded=crash"), args...)
			if !crash.killed {
				t.Fatalf("the reclaim was not killed at reclaim/recorded\n%s", crash)
			}
			if !tc.missing {
				s.checkWorkPreserved(t)
			}
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil || held.Owner.PID != crash.pid {
				t.Fatalf("the killed reclaim left no reservation of its own: %+v %v", held, err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			allocate := func() {
				t.Helper()
				r := crashExec(t, bin, s.repo.Dir, ttl, "workspace", "allocate", "T-1", "--branch", "again", "--json")
				if r.exit != 0 {
					t.Fatalf("allocating T-1 again after the dead reclaimer's reservation expired\n%s", r)
				}
				(&fixtures.Repo{T: t, Dir: s.target.Path}).WriteFile("new-work.txt", "the new workspace's\n")
			}
			if tc.allocateFirst {
				allocate()
			}
			retry := crashExec(t, bin, s.repo.Dir, ttl, args...)
			if retry.exit != 0 {
				t.Fatalf("the retry of the reclaim killed after its record\n%s", retry)
			}
			var res crashReclaimJSON
			retry.decode(t, &res)
			if res.Reclaim == nil || !res.Reclaim.Removed || res.Reclaim.Branch != "majlis/T-1" || res.Reclaim.SalvageRef == nil {
				t.Fatalf("the retry's result does not report the reclaim\n%s", retry)
			}
			if !tc.missing {
				if lack := s.refHoldsWork(t, *res.Reclaim.SalvageRef); lack != "" {
					t.Errorf("the salvage ref %s lacks %s", *res.Reclaim.SalvageRef, lack)
				}
			} else if got := s.repo.Git("show", *res.Reclaim.SalvageRef+":staged.txt"); got != s.work["staged.txt"] {
				t.Errorf("the salvage of git's entry holds staged.txt %q, want the staged version", got)
			}
			if _, err := s.p.leases.Inspect(reclaimPrefix + "T-1"); err == nil {
				t.Errorf("the reservation is still held after the retry")
			}
			if !tc.allocateFirst {
				allocate()
			}
			if got := (&fixtures.Repo{T: t, Dir: s.target.Path}).ReadFile("new-work.txt"); got != "the new workspace's\n" {
				t.Errorf("the new workspace's file holds %q", got)
			}
			again := crashExec(t, bin, s.repo.Dir, ttl, args...)
			var first, second any
			retry.decode(t, &first)
			again.decode(t, &second)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("a second retry returned another result (-first +second):\n%s", diff)
			}
			if _, err := os.Lstat(s.target.Path); err != nil {
				t.Errorf("the new workspace is gone after the retries: %v", err)
			}
			s.checkFsck(t, "after the retries")
		})
	}
}

// TestReclaimMissingCrash: the reclaim of a workspace whose folder was
// deleted by hand, killed once git's entry is salvaged and once it is
// moved aside. What only the entry held (a detached commit, a worktree
// ref, the staged blob) is reachable after the crash and after the retry,
// which finishes the reclaim; git fsck is clean.
func TestReclaimMissingCrash(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, point := range []string{"reclaim/forget-salvaged", "reclaim/forget-aside"} {
		t.Run(strings.TrimPrefix(point, "reclaim/"), func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			ws := &fixtures.Repo{T: t, Dir: s.target.Path}
			keep := ws.WorktreeRefCommit("majlis/T-1", "refs/worktree/keep", "w.txt", "a worktree ref\n")
			detached := ws.DetachedCommit("d.txt", "detached\n")
			ws.WriteFile("staged.txt", "staged, then the folder went\n")
			ws.Git("add", "staged.txt")
			staged := fixtures.BlobID(t, "staged, then the folder went\n")
			if err := os.RemoveAll(s.target.Path); err != nil {
				t.Fatal(err)
			}
			ttl := []string{envvar.ReservationTTL + "=2s"}
			args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "R", "--json"}
			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"="+point+"=crash"), args...)
			if !crash.killed {
				t.Fatalf("the reclaim was not killed at %s\n%s", point, crash)
			}
			check := func(when string) {
				for what, id := range map[string]string{"the detached commit": detached, "the worktree ref's commit": keep, "the staged blob": staged} {
					if !s.repo.Reachable(id) {
						t.Errorf("%s: %s (%s) is reachable from no ref", when, what, id)
					}
				}
				s.checkFsck(t, when)
			}
			check("after the crash")
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatal(err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			if r := crashExec(t, bin, s.repo.Dir, ttl, args...); r.exit != 0 {
				t.Fatalf("the retry did not finish the reclaim\n%s", r)
			}
			check("after the retry")
			if left, _ := filepath.Glob(filepath.Join(s.p.stateDir, "trash", "*")); len(left) > 0 {
				t.Errorf("git's entry left in the trash (not kept): %v", left)
			}
			if strings.Contains(s.repo.Git("worktree", "list", "--porcelain"), "T-1") {
				t.Errorf("git still lists T-1")
			}
			// Restore gives back what the entry held.
			if r := crashExec(t, bin, s.repo.Dir, ttl, "workspace", "restore", "T-1", "--json"); r.exit != 0 {
				t.Fatalf("restore after the retry\n%s", r)
			}
			back := &fixtures.Repo{T: t, Dir: s.target.Path}
			if back.Head() != detached || back.ReadFile("staged.txt") != "staged, then the folder went\n" ||
				strings.TrimSpace(back.Git("rev-parse", "refs/worktree/keep")) != keep {
				t.Errorf("restored: HEAD %s, staged.txt %q, refs %s", back.Head(), back.ReadFile("staged.txt"), back.Git("for-each-ref", "refs/worktree"))
			}
		})
	}
}

// TestBulkReclaimRetryResumesMembers: a bulk reclaim of the released
// workspaces (T-1 and T-2, both dirty) killed at each of several points of
// its first member's reclaim. The retry with the bulk's request id and
// digest finishes every member (none refused as preview_stale), each with
// its work on a salvage ref, and a second retry returns the same result.
func TestBulkReclaimRetryResumesMembers(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, point := range []string{"reclaim/salvaged", "reclaim/moved", "reclaim/before-delete", "reclaim/recorded"} {
		t.Run(strings.TrimPrefix(point, "reclaim/"), func(t *testing.T) {
			t.Parallel()
			s := newCrashScene(t)
			if _, err := s.p.Release(t.Context(), "T-1", ""); err != nil {
				t.Fatal(err)
			}
			ttl := []string{envvar.ReservationTTL + "=2s"}
			pv := crashExec(t, bin, s.repo.Dir, nil, "workspace", "reclaim", "--released", "--preview", "--json")
			var preview struct {
				BulkPreview struct {
					Digest     string `json:"digest"`
					Workspaces []struct {
						Binding string `json:"binding"`
					} `json:"workspaces"`
				} `json:"bulk_preview"`
			}
			pv.decode(t, &preview)
			if len(preview.BulkPreview.Workspaces) != 2 {
				t.Fatalf("bulk preview: %s", pv)
			}
			args := []string{"workspace", "reclaim", "--released", "--confirm", preview.BulkPreview.Digest, "--request-id", "B", "--json"}
			crash := crashExec(t, bin, s.repo.Dir, append(ttl, failpoint.EnvVar+"="+point+"=crash"), args...)
			if !crash.killed {
				t.Fatalf("the bulk reclaim was not killed at %s\n%s", point, crash)
			}
			s.checkWorkPreserved(t)
			held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatal(err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			retry := crashExec(t, bin, s.repo.Dir, ttl, args...)
			var out struct {
				BulkReclaim struct {
					Reclaimed  int `json:"reclaimed"`
					Failed     int `json:"failed"`
					Workspaces []struct {
						Binding string `json:"binding"`
						Status  string `json:"status"`
						Result  *struct {
							SalvageRef *string `json:"salvage_ref"`
						} `json:"result"`
					} `json:"workspaces"`
				} `json:"bulk_reclaim"`
			}
			retry.decode(t, &out)
			if retry.exit != 0 || out.BulkReclaim.Reclaimed != 2 || out.BulkReclaim.Failed != 0 {
				t.Fatalf("the retry did not finish every member\n%s", retry)
			}
			for _, w := range out.BulkReclaim.Workspaces {
				if w.Status != "reclaimed" || w.Result == nil || w.Result.SalvageRef == nil {
					t.Errorf("%s: %s %+v", w.Binding, w.Status, w.Result)
					continue
				}
				if w.Binding == "T-1" {
					if lack := s.refHoldsWork(t, *w.Result.SalvageRef); lack != "" {
						t.Errorf("T-1's salvage ref %s lacks %s", *w.Result.SalvageRef, lack)
					}
				}
			}
			again := crashExec(t, bin, s.repo.Dir, ttl, args...)
			var first, second any
			retry.decode(t, &first)
			again.decode(t, &second)
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("a second retry returned another result (-first +second):\n%s", diff)
			}
			s.checkFsck(t, "after the retries")
		})
	}
}
