package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/internal/envvar"
	"github.com/majlis-dev/majlis/internal/failpoint"
)

func findingCodes(rep *DoctorReport) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range rep.Findings {
		out[f.Code] = f
	}
	return out
}

// doctor reads everything and changes nothing; --repair moves a damaged
// record aside after salvaging the workspace, then rebuilds the journal,
// each only after the preview's digest is confirmed.
func TestDoctorAndRepair(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	healthy, err := p.Doctor(t.Context())
	if err != nil || !healthy.OK || len(healthy.Findings) != 0 {
		t.Fatalf("doctor of a healthy repository: %+v, %v", healthy, err)
	}
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
	peerDirty(t, a.Path)
	file := damageModes[0].damage(t, p)

	before := peerObserve(t, p, repo, a.Path, b.Path)
	rep, err := Doctor(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := findingCodes(rep)[FindingRecordDamaged]
	if rep.OK || !ok || f.Path != file || f.Binding != "A" || !f.Repair || f.Severity != SeverityError || !strings.Contains(f.Fix, "--repair") {
		t.Fatalf("doctor: %+v, want record_damaged for %s", rep.Findings, file)
	}
	pv, err := p.Repair(t.Context(), RepairOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Actions) != 1 || pv.Actions[0].Kind != RepairQuarantineRecord || len(pv.Actions[0].Salvage) != 1 || pv.Actions[0].Salvage[0] != a.Path {
		t.Fatalf("repair preview: %+v", pv.Actions)
	}
	if _, err := p.Repair(t.Context(), RepairOptions{}); !errors.Is(err, ErrUnconfirmed) {
		t.Errorf("unconfirmed repair: %v", err)
	}
	if _, err := p.Repair(t.Context(), RepairOptions{Confirm: "sha256:" + strings.Repeat("0", 64)}); !errors.Is(err, ErrPreviewStale) {
		t.Errorf("repair with another digest: %v", err)
	}
	peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, b.Path))

	res, err := p.Repair(t.Context(), RepairOptions{Confirm: pv.Digest})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Done) != 1 || len(res.Done[0].SalvageRefs) != 1 || res.Done[0].MovedTo == "" {
		t.Fatalf("repair: %+v", res.Done)
	}
	// The work is on the salvage ref; the workspace and its files stay.
	ref := res.Done[0].SalvageRefs[0]
	if got := repo.Git("show", ref+":notes.txt"); got != "untracked notes\n" {
		t.Errorf("salvage %s holds notes.txt %q", ref, got)
	}
	if _, err := os.Stat(filepath.Join(a.Path, "notes.txt")); err != nil {
		t.Errorf("workspace files: %v", err)
	}
	if _, err := os.Stat(filepath.Join(res.Done[0].MovedTo, filepath.Base(file))); err != nil {
		t.Errorf("damaged record not kept aside: %v", err)
	}
	if ws := listed(t, p); ws["A"] != nil || ws["B"] == nil {
		t.Errorf("list after repair: %v", ws)
	}
	rep, err = p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := findingCodes(rep)[FindingLockOrphaned]; !ok {
		t.Errorf("doctor after repair: %+v, want A's majlis lock reported as orphaned", rep.Findings)
	}
}

func TestDoctorJournalRebuild(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	mustAllocate(t, p, AllocateOptions{Binding: "B"})
	want, _ := os.ReadFile(p.records.JournalPath())
	if err := os.WriteFile(p.records.JournalPath(), want[:len(want)-5], 0o644); err != nil {
		t.Fatal(err)
	}
	rep, _ := p.Doctor(t.Context())
	if _, ok := findingCodes(rep)[FindingJournalUnusable]; !ok {
		t.Fatalf("doctor: %+v, want journal_unusable", rep.Findings)
	}
	res, err := p.Repair(t.Context(), RepairOptions{Yes: true})
	if err != nil || len(res.Done) != 1 || res.Done[0].Kind != RepairRebuildJournal {
		t.Fatalf("repair: %+v, %v", res, err)
	}
	if _, err := p.records.Journal(); err != nil {
		t.Errorf("rebuilt journal: %v", err)
	}
	if rep, _ := p.Doctor(t.Context()); !rep.OK {
		t.Errorf("doctor after repair: %+v", rep.Findings)
	}
}

func TestDoctorDamagedRegistration(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	rewrite(t, filepath.Join(p.stateDir, "repository.json"), func(b []byte) []byte { return b[:5] })
	if _, err := Open(t.Context(), repo.Dir, Options{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "repository.json") {
		t.Errorf("open: %v", err)
	}
	rep, err := Doctor(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := findingCodes(rep)[FindingRegistrationDamaged]; !ok || rep.OK || f.Fix == "" {
		t.Errorf("doctor: %+v", rep)
	}
}

// A reclaim killed holding its reservation: once it expired, doctor names
// it, and --repair retires the lease file only (claims, worktree and refs
// as they were).
func TestDoctorRetiresDeadReservation(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	crash := crashExec(t, bin, s.repo.Dir, []string{envvar.ReservationTTL + "=2s", failpoint.EnvVar + "=reclaim/before-move=crash"},
		"workspace", "reclaim", "T-1", "--yes", "--json")
	if !crash.killed {
		t.Fatalf("the reclaim was not killed\n%s", crash)
	}
	held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, held.ExpiresAt)
	rep, err := s.p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := findingCodes(rep)[FindingReservationDead]; !ok || f.Binding != "T-1" || !f.Repair {
		t.Fatalf("doctor: %+v, want reservation_dead_owner for T-1", rep.Findings)
	}
	claims := crashCaptureFiles(t, s.p.records.Dir("T-1"))
	tree := crashCaptureDir(t, s.target.Path)
	refs := s.repo.Git("for-each-ref", "--format=%(objectname) %(refname)")
	pv, err := s.p.Repair(t.Context(), RepairOptions{Preview: true})
	if err != nil || len(pv.Actions) != 1 || pv.Actions[0].Kind != RepairRetireReservation {
		t.Fatalf("repair preview: %+v, %v", pv, err)
	}
	if _, err := s.p.Repair(t.Context(), RepairOptions{Confirm: pv.Digest}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(s.leasePath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lease is still there: %v", err)
	}
	if diff := cmp.Diff(claims, crashCaptureFiles(t, s.p.records.Dir("T-1"))); diff != "" {
		t.Errorf("repair changed the claims (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(tree, crashCaptureDir(t, s.target.Path)); diff != "" {
		t.Errorf("repair changed the worktree (-before +after):\n%s", diff)
	}
	if got := s.repo.Git("for-each-ref", "--format=%(objectname) %(refname)"); got != refs {
		t.Errorf("repair changed refs:\n%s\nwant:\n%s", got, refs)
	}
}

// The claims folder holds something majlis did not write: doctor says so,
// and calls no lock orphaned for want of the claims.
func TestDoctorUnexpectedEntry(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	f := filepath.Join(p.stateDir, "claims", ".DS_Store")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	codes := findingCodes(rep)
	if got, ok := codes[FindingStateUnexpected]; !ok || got.Path != f {
		t.Errorf("doctor: %+v, want state_unexpected_entry for %s", rep.Findings, f)
	}
	if _, ok := codes[FindingLockOrphaned]; ok {
		t.Errorf("doctor called A's lock orphaned: %+v", rep.Findings)
	}
	if res, err := p.Repair(t.Context(), RepairOptions{Preview: true}); err != nil || len(res.Actions) != 0 {
		t.Errorf("repair preview: %+v, %v; want nothing to do", res, err)
	}
}

func TestDoctorDamagedLedger(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	f := filepath.Join(p.stateDir, "admission.db")
	if err := os.WriteFile(f, []byte("not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := findingCodes(rep)[FindingLedgerDamaged]; !ok || got.Path != f || got.Severity != SeverityError {
		t.Errorf("doctor: %+v, want ledger_damaged for %s", rep.Findings, f)
	}
	if b, _ := os.ReadFile(f); string(b) != "not a database\n" {
		t.Errorf("doctor changed the ledger: %q", b)
	}
}

// A retry of a repair with the same request id returns the recorded result
// and does nothing again; another confirmation with that id is refused.
func TestRepairRequestID(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	if err := os.Remove(p.records.JournalPath()); err != nil {
		t.Fatal(err)
	}
	first, err := p.Repair(t.Context(), RepairOptions{Yes: true, RequestID: "fix-1"})
	if err != nil || len(first.Done) != 1 {
		t.Fatalf("repair: %+v, %v", first, err)
	}
	journal, _ := os.ReadFile(p.records.JournalPath())
	if err := os.Remove(p.records.JournalPath()); err != nil {
		t.Fatal(err)
	}
	again, err := p.Repair(t.Context(), RepairOptions{Yes: true, RequestID: "fix-1"})
	if err != nil || !cmp.Equal(first, again) {
		t.Fatalf("retry: %+v, %v; want %+v", again, err, first)
	}
	if _, err := os.Lstat(p.records.JournalPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the retry did the repair again: %v", err)
	}
	if _, err := p.Repair(t.Context(), RepairOptions{Confirm: "sha256:" + strings.Repeat("1", 64), RequestID: "fix-1"}); !errors.Is(err, ErrRequestConflict) {
		t.Errorf("another confirmation under the same id: %v", err)
	}
	if len(journal) == 0 {
		t.Errorf("the rebuilt journal is empty")
	}
}

// docs/doctor.md describes every finding code doctor can report.
func TestDoctorCodesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "doctor.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, code := range allFindingCodes {
		if seen[code] {
			t.Errorf("finding code %s listed twice", code)
		}
		seen[code] = true
		if !strings.Contains(string(doc), "| `"+code+"` |") {
			t.Errorf("docs/doctor.md has no row for the finding code %s", code)
		}
	}
}

// A workspace whose directory was replaced, and one whose directory is
// gone: doctor names each, and changes nothing.
func TestDoctorWorkspaceIdentity(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	b := mustAllocate(t, p, AllocateOptions{Binding: "B"})
	if err := os.Rename(a.Path, a.Path+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(a.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.Path, b.Path+".gone"); err != nil {
		t.Fatal(err)
	}
	before := peerObserve(t, p, repo, a.Path, a.Path+".moved", b.Path+".gone")
	rep, err := p.Doctor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	codes := findingCodes(rep)
	if f, ok := codes[FindingWorkspaceReplaced]; !ok || f.Binding != "A" {
		t.Errorf("doctor: %+v, want workspace_replaced for A", rep.Findings)
	}
	if f, ok := codes[FindingWorkspaceMissing]; !ok || f.Binding != "B" {
		t.Errorf("doctor: %+v, want workspace_missing for B", rep.Findings)
	}
	peerUnchanged(t, before, peerObserve(t, p, repo, a.Path, a.Path+".moved", b.Path+".gone"))
}

// The damaged record changed after the preview: the confirmation is stale,
// and nothing is salvaged or moved.
func TestRepairStaleAfterChange(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	a := mustAllocate(t, p, AllocateOptions{Binding: "A"})
	peerDirty(t, a.Path)
	file := damageModes[0].damage(t, p)
	pv, err := p.Repair(t.Context(), RepairOptions{Preview: true})
	if err != nil || len(pv.Actions) != 1 {
		t.Fatalf("preview: %+v, %v", pv, err)
	}
	rewrite(t, file, func([]byte) []byte { return []byte("other damage") })
	before := peerObserve(t, p, repo, a.Path)
	if _, err := p.Repair(t.Context(), RepairOptions{Confirm: pv.Digest}); !errors.Is(err, ErrPreviewStale) {
		t.Fatalf("confirm after the record changed: %v, want preview_stale", err)
	}
	peerUnchanged(t, before, peerObserve(t, p, repo, a.Path))
	if _, err := os.Stat(filepath.Join(p.stateDir, "damaged")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("damaged/ made by a refused repair: %v", err)
	}
}
