package provider

import (
	"path/filepath"
	"testing"
)

// TestJournalAfterAnAllocationKilledAtItsLine: an allocation killed once
// its claim's line was in the journal (SIGKILL at its fsync, found with
// strace's fault injection), before its claim was published, leaves a
// line whose claim never existed; its retry publishes the claim of the
// same seq, at another time, so another digest, and appends its line.
// The journal then said "claimed twice" and was unusable for good (doctor:
// journal_unusable). Both lines stay usable: the one without a claim only
// names one more possible peer.
func TestJournalAfterAnAllocationKilledAtItsLine(t *testing.T) {
	t.Parallel()
	repo, p, _ := undoProvider(t)
	path := filepath.Join(repo.Dir+".workspaces", "T-1")
	ghost := journalEntry{Kind: journalClaim, Binding: "T-1", Seq: 1, Path: path,
		Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
	if err := p.records.appendJournal(ghost, true); err != nil {
		t.Fatal(err)
	}
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if w.Path != path {
		t.Fatalf("allocated at %s, the killed allocation's line names %s", w.Path, path)
	}
	js, err := p.records.Journal()
	if err != nil || len(js) != 2 {
		t.Fatalf("journal: %d claims, %v: want both lines, usable", len(js), err)
	}
	rep, err := Doctor(t.Context(), repo.Dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Code == FindingJournalUnusable || f.Code == FindingJournalMismatch {
			t.Errorf("doctor: %+v", f)
		}
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatalf("reclaim beside the killed allocation's line: %v", err)
	}
}
