package provider

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJournalRoundTrip(t *testing.T) {
	t.Parallel()
	entries := []journalEntry{
		{Kind: journalClaim, Binding: "T-1", Seq: 1, Digest: "sha256:ab", Path: "/w/T-1"},
		{Kind: journalClaim, Binding: "odd", Seq: 2, Digest: "sha256:cd", Path: "/w/a\tb\nc \"d\" é"},
		{Kind: journalReclaimed, Binding: "T-1", Seq: 1, Digest: "sha256:ab", Dev: 66, Ino: 1234},
		{Kind: journalFailed, Binding: "odd", Seq: 2, Digest: "sha256:cd"},
	}
	var data []byte
	for _, e := range entries {
		line := e.encode()
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("%+v encodes to %q: not one line", e, line)
		}
		data = append(data, line...)
	}
	got, err := decodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(entries, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	// Any damage makes the whole journal unusable, never silently shorter.
	for name, bad := range map[string][]byte{
		"torn tail":      data[:len(data)-5],
		"flipped byte":   bytes.Replace(data, []byte("T-1"), []byte("T-2"), 1),
		"unknown format": bytes.Replace(data, []byte(journalMagic), []byte("majlis-journal-9"), 1),
		"blank line":     append(append([]byte{}, data...), '\n'),
	} {
		if _, err := decodeJournal(bad); !errors.Is(err, errJournalUnusable) {
			t.Errorf("%s: %v, want errJournalUnusable", name, err)
		}
	}
}

func FuzzDecodeJournal(f *testing.F) {
	f.Add(journalEntry{Kind: journalClaim, Binding: "T-1", Seq: 1, Digest: "sha256:ab", Path: "/w/T-1"}.encode())
	f.Add([]byte("majlis-journal-1\tclaim\tT\t1\tsha256:x\t0\t0\t\"/a\"\t00000000\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeJournal(data)
		if err != nil {
			if !errors.Is(err, errJournalUnusable) {
				t.Fatalf("error %v is not errJournalUnusable", err)
			}
			return
		}
		// What decodes re-encodes to the same bytes: nothing is dropped.
		var again []byte
		for _, e := range entries {
			again = append(again, e.encode()...)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("decoded %q, re-encodes as %q", data, again)
		}
	})
}

// A new repository starts a journal, allocation and reclaim append to it,
// and the fast check uses it.
func TestJournalFollowsClaims(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	mustAllocate(t, p, AllocateOptions{Binding: "B"})
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "A", Yes: true}); err != nil {
		t.Fatal(err)
	}
	claims, err := p.records.Journal()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range claims {
		got = append(got, c.Binding+map[bool]string{true: " reclaimed", false: ""}[c.Reclaimed])
	}
	if diff := cmp.Diff([]string{"A reclaimed", "B"}, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	_ = repo
}

// A claim the journal does not name (the journal was removed, or a
// binding folder appeared beside it) makes the fast check fall back to the
// full one, which still sees the overlapping peer.
func TestJournalIncompleteFallsBack(t *testing.T) {
	t.Parallel()
	for _, damage := range []string{"removed", "torn", "binding missing"} {
		t.Run(damage, func(t *testing.T) {
			_, p := newProvider(t)
			target := mustAllocate(t, p, AllocateOptions{Binding: "outer"})
			journal := filepath.Join(p.stateDir, journalName)
			saved, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "removed":
				if err := os.Remove(journal); err != nil {
					t.Fatal(err)
				}
			case "torn":
				if err := os.WriteFile(journal, saved[:len(saved)-3], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			mustAllocate(t, p, AllocateOptions{Binding: "inner", Path: filepath.Join(target.Path, "inner"), AllowNested: true})
			if damage == "binding missing" {
				// The inner claim exists, but the journal forgets it.
				if err := os.WriteFile(journal, saved, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.records.Journal(); !errors.Is(err, errJournalUnusable) {
				t.Fatalf("readJournal: %v, want errJournalUnusable", err)
			}
			rec, err := p.records.Current("test", "outer")
			if err != nil {
				t.Fatal(err)
			}
			peers, err := p.retainedPeers(t.Context(), rec)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, pr := range peers {
				found = found || pr.Kind == PeerWorkspace && pr.Binding == "inner" && pr.Overlaps
			}
			if !found {
				t.Errorf("fast check with a %s journal missed the nested workspace: %+v", damage, peers)
			}
			if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "outer", Yes: true}); !errors.Is(err, ErrPeerOverlap) {
				t.Errorf("reclaim: %v, want ErrPeerOverlap", err)
			}
			if !strings.Contains(damage, "removed") {
				return
			}
			// Appends never recreate a removed journal.
			if _, err := os.Stat(journal); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("journal came back: %v", err)
			}
		})
	}
}

// A FIFO in the journal's place (the journal is appended to before a claim
// is published) must make the allocation refuse at once, naming the file,
// not wait for a reader; the preview, which only reads the journal, falls
// back to the claim records.
func TestJournalFIFORefuses(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	mustAllocate(t, p, AllocateOptions{Binding: "A"})
	journal := filepath.Join(p.StateDir(), journalName)
	if err := os.Remove(journal); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(journal, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := p.Allocate(t.Context(), AllocateOptions{Binding: "B"})
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), journal) {
		t.Fatalf("allocate: %v, want malformed naming %s", err, journal)
	}
	if left, _ := filepath.Glob(filepath.Join(p.records.Dir("B"), "*")); len(left) > 0 {
		t.Errorf("a refused allocation left records of B: %v", left)
	}
	if _, err := p.records.Journal(); !errors.Is(err, errJournalUnusable) {
		t.Errorf("readJournal: %v, want errJournalUnusable", err)
	}
	if _, err := p.PreviewReclaim(t.Context(), "A"); err != nil {
		t.Errorf("preview: %v", err)
	}
}
