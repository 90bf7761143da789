package provider

// Crash tests of the purge of a kept trash folder (issue 24, items 2 and
// 6): the real majlis binary (failpoints build) is killed with SIGKILL at
// every purge step, then the purge is retried and the workspace restored.
// Before the purge is recorded (purge/salvaged), restore --from-trash
// brings the whole folder back; once it is recorded, restore --from-trash
// refuses a folder that may be half deleted, doctor reports it, a retry
// finishes the purge, and the salvage restores everything the folder held
// (ignored files aside) and every commit stays reachable.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
)

// purgeFailpoints are the points a purge passes, in order.
var purgeFailpoints = []string{"purge/salvaged", "purge/started", "gitops/delete-partial", "purge/deleted", "purge/dropped"}

func TestPurgeCrashMatrix(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	declared := failpoint.Names()
	for _, n := range declared {
		if strings.HasPrefix(n, "purge/") && !slices.Contains(purgeFailpoints, n) {
			t.Errorf("failpoint %s is not in the purge crash matrix", n)
		}
	}
	for _, fp := range purgeFailpoints {
		if !slices.Contains(declared, fp) {
			t.Fatalf("failpoint %s is not declared", fp)
		}
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			purgeCrashAt(t, bin, fp)
		})
	}
}

func purgeCrashAt(t *testing.T, bin, fp string) {
	repo, p := peerProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, w.Path)
	ttl := []string{envvar.ReservationTTL + "=2s"}
	// Kept for a nanosecond: due at once.
	rec := crashExec(t, bin, repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "1ns", "--json")
	if rec.exit != 0 {
		t.Fatalf("reclaim\n%s", rec)
	}
	var out struct {
		Reclaim ReclaimResult `json:"reclaim"`
	}
	rec.decode(t, &out)
	// Someone used the kept trash: a commit on its detached HEAD, a
	// per-worktree ref, an edit, a staged file.
	trash := &fixtures.Repo{T: t, Dir: out.Reclaim.TrashPath}
	trash.WriteFile("src/after.go", "package app // committed in the trash\n")
	trash.Git("add", "src/after.go")
	trash.Git("commit", "-q", "-m", "made in the kept trash")
	trash.Git("update-ref", "refs/worktree/kept", trash.Head())
	trash.WriteFile("README.md", "# edited in the trash\n")
	trash.WriteFile("src/later.go", "package app // staged in the trash\n")
	trash.Git("add", "src/later.go")
	whole := crashCaptureFiles(t, trash.Dir)
	before := observe(t, trash, nil)
	delete(before.view, "file build/out.o") // ignored: no salvage keeps it
	reach := reachable(t, repo)

	crash := crashExec(t, bin, repo.Dir, append(ttl, "MAJLIS_FAILPOINTS="+fp+"=crash"), "gc", "--purge-due", "--json")
	if !crash.killed {
		t.Fatalf("the purge was not killed at %s\n%s", fp, crash)
	}
	held, err := p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, held.ExpiresAt)

	if fp == "purge/salvaged" {
		// Not yet recorded: the folder is whole, and the reclaim undoes.
		r := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--from-trash", "--json")
		if r.exit != 0 {
			t.Fatalf("restore --from-trash before the purge was recorded\n%s", r)
		}
		if diff := cmp.Diff(whole, crashCaptureFiles(t, w.Path)); diff != "" {
			t.Errorf("restored from the trash (-before +after):\n%s", diff)
		}
		purgeCheckReachable(t, repo, reach)
		return
	}
	r := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--from-trash", "--json")
	if r.exit != 3 || r.errorCode() != "interrupted" || !strings.Contains(r.stdout, "half_purged") {
		t.Fatalf("restore --from-trash of a half-purged trash: want exit 3, interrupted, half_purged\n%s", r)
	}
	doc := crashExec(t, bin, repo.Dir, nil, "doctor", "--json")
	if !strings.Contains(doc.stdout, `"code": "trash_half_purged"`) {
		t.Errorf("doctor does not report the half-purged trash\n%s", doc)
	}
	retry := crashExec(t, bin, repo.Dir, ttl, "gc", "--purge-due", "--json")
	if retry.exit != 0 {
		t.Fatalf("retry\n%s", retry)
	}
	var purged struct {
		Purge PurgeResult `json:"purge"`
	}
	retry.decode(t, &purged)
	if len(purged.Purge.Purged) != 1 || purged.Purge.Purged[0].SalvageRef == "" {
		t.Fatalf("the retry did not finish the purge with its salvage: %+v", purged.Purge)
	}
	if wts := repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, trashPrefix) {
		t.Errorf("git still lists the trash folder:\n%s", wts)
	}
	if left := trashLeft(t, p, repo.Dir+".workspaces"); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	purgeCheckReachable(t, repo, reach)
	res := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--json")
	if res.exit != 0 {
		t.Fatalf("restore of the purge's salvage\n%s", res)
	}
	got := observe(t, &fixtures.Repo{T: t, Dir: w.Path}, nil)
	if diff := cmp.Diff(before.view, got.view); diff != "" {
		t.Errorf("restored from the purge's salvage (-trash before the purge +restored):\n%s", diff)
	}
}

func purgeCheckReachable(t *testing.T, repo *fixtures.Repo, before map[string]bool) {
	t.Helper()
	after := reachable(t, repo)
	for id := range before {
		if !after[id] {
			t.Errorf("commit %s was reachable before the purge, not after", id)
		}
	}
}

// TestReclaimStartsBackgroundPurge: without a server, the majlis command
// that reclaimed starts, once its result is written, a detached purge of
// the kept trash that is due; the reclaim itself deletes none of it.
func TestReclaimStartsBackgroundPurge(t *testing.T) {
	t.Parallel()
	bin := fixtures.Binary(t)
	repo, p := peerProvider(t)
	on := []string{envvar.BackgroundPurge + "=1"}
	for _, b := range []string{"T-1", "T-2"} {
		w := mustAllocate(t, p, AllocateOptions{Binding: b})
		peerDirty(t, w.Path)
	}
	first := crashExec(t, bin, repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "1ns", "--json")
	if first.exit != 0 {
		t.Fatalf("reclaim T-1\n%s", first)
	}
	var out struct {
		Reclaim ReclaimResult `json:"reclaim"`
	}
	first.decode(t, &out)
	kept := out.Reclaim.TrashPath
	second := crashExec(t, bin, repo.Dir, on, "workspace", "reclaim", "T-2", "--yes", "--json")
	if second.exit != 0 {
		t.Fatalf("reclaim T-2\n%s", second)
	}
	crashWaitFor(t, "the background purge of "+kept, 2*time.Minute, func() bool {
		r, err := p.claimOf("T-1", 1)
		return err == nil && r.has(EventPurged) && backgroundPurges(repo.Dir) == 0
	})
	if _, err := os.Lstat(kept); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the due trash %s is still there: %v", kept, err)
	}
	if r, err := p.claimOf("T-2", 1); err != nil || r.has(EventPurged) {
		t.Errorf("T-2's trash, kept for a day, was purged: %v", err)
	}
}

// backgroundPurges counts the running 'majlis gc --purge-due' processes
// of the repository at dir.
func backgroundPurges(dir string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), "gc\x00--purge-due\x00--repo\x00"+dir) {
			n++
		}
	}
	return n
}

// TestPurgeKeptEntryCrashMatrix: git's entry of a workspace whose folder
// was deleted by hand, kept aside for the undo window (issue 24 items 1
// and 2), purged by the real majlis binary killed with SIGKILL at every
// purge step. After the crash and after the retry, which finishes the
// purge, every commit and blob only the entry held is reachable (detached
// HEAD, worktree and bisect refs, a commit only HEAD's reflog names, a
// staged blob) and git fsck is clean; once the purge is recorded, doctor
// reports it half purged until the retry; restore then gives the entry's
// HEAD and index back.
func TestPurgeKeptEntryCrashMatrix(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, fp := range purgeFailpoints {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			for range fixtures.Rounds(1, 4) {
				purgeEntryCrashAt(t, bin, fp)
			}
		})
	}
}

func purgeEntryCrashAt(t *testing.T, bin, fp string) {
	repo, p := peerProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	held := makeEntryHeld(t, &fixtures.Repo{T: t, Dir: w.Path}, w.Branch)
	if err := os.RemoveAll(w.Path); err != nil {
		t.Fatal(err)
	}
	ttl := []string{envvar.ReservationTTL + "=2s"}
	rec := crashExec(t, bin, repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--keep-trash", "1ns", "--json")
	if rec.exit != 0 {
		t.Fatalf("reclaim\n%s", rec)
	}
	aside := p.entryAsidePath(&mustReadBinding(t, p, "T-1")[0].Claim)
	if _, err := os.Lstat(aside); err != nil {
		t.Fatalf("git's entry is not kept aside: %v\n%s", err, rec)
	}
	reach := reachable(t, repo)
	crash := crashExec(t, bin, repo.Dir, append(ttl, failpoint.EnvVar+"="+fp+"=crash"), "gc", "--purge-due", "--json")
	if !crash.killed {
		t.Fatalf("the purge was not killed at %s\n%s", fp, crash)
	}
	purgeCheckReachable(t, repo, reach)
	held.mustSurvive(t, repo)
	kept, err := p.KeptTrash(t.Context())
	if err != nil || len(kept) != 1 || !kept[0].Entry || kept[0].HalfPurged != (fp != "purge/salvaged") {
		t.Fatalf("kept trash after the crash at %s: %+v, %v", fp, kept, err)
	}
	if fp == "purge/salvaged" {
		if !ownEntry(mustReadBinding(t, p, "T-1")[0], aside) {
			t.Errorf("the entry is not whole before the purge was recorded")
		}
	} else if doc := crashExec(t, bin, repo.Dir, nil, "doctor", "--json"); !strings.Contains(doc.stdout, `"code": "trash_half_purged"`) {
		t.Errorf("doctor does not report the half-purged entry\n%s", doc)
	}
	lease, err := p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, lease.ExpiresAt)
	retry := crashExec(t, bin, repo.Dir, ttl, "gc", "--purge-due", "--json")
	if retry.exit != 0 {
		t.Fatalf("retry\n%s", retry)
	}
	var purged struct {
		Purge PurgeResult `json:"purge"`
	}
	retry.decode(t, &purged)
	if len(purged.Purge.Purged) != 1 || purged.Purge.Purged[0].Path != aside || len(purged.Purge.Left) != 0 {
		t.Fatalf("the retry did not finish the purge: %+v", purged.Purge)
	}
	if _, err := os.Lstat(aside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("git's entry kept aside is still there after the retry: %v", err)
	}
	purgeCheckReachable(t, repo, reach)
	held.mustSurvive(t, repo)
	if r := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--json"); r.exit != 0 {
		t.Fatalf("restore after the purge\n%s", r)
	}
	back := &fixtures.Repo{T: t, Dir: w.Path}
	if back.Head() != held.detached || back.Git("show", ":README.md") != "staged, then the folder went\n" {
		t.Errorf("restored after the purge: HEAD %s, staged README %q", back.Head(), back.Git("show", ":README.md"))
	}
}
