package provider

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testSummary() *previewSummary {
	return &previewSummary{Format: formatPreview, Digest: "sha256:" + strings.Repeat("ab", 32), Binding: "T-1",
		At: time.Unix(1e9, 0).UTC(), ClaimDigest: "sha256:" + strings.Repeat("cd", 32), Branch: "majlis/T-1",
		Head: strings.Repeat("1", 40), DirtySubmodules: []string{},
		Files: []summaryFile{{Path: "a.txt", State: "tracked .M"}, {Path: "new.txt", State: "tracked R.", From: "old.txt"},
			{Path: "notes.txt", State: "untracked"}},
		FilesTotal: 3,
		Peers:      []Peer{{Kind: "workspace", Path: "/w/T-2", Binding: "T-2", Relation: "disjoint"}},
		PeersTotal: 1}
}

// A summary that decodes is valid, re-encodes to the same record, and
// compared with itself shows no change; comparing it with another never
// panics. Anything else is refused, never half-read.
func FuzzDecodePreviewSummary(f *testing.F) {
	good, _, err := seal("preview", testSummary())
	if err != nil {
		f.Fatal(err)
	}
	empty := testSummary()
	empty.Files, empty.Peers, empty.FilesTotal, empty.PeersTotal = []summaryFile{}, []Peer{}, 0, 0
	emptyData, _, _ := seal("preview", empty)
	f.Add(good)
	f.Add(emptyData)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"preview":{"format":"majlis.preview/1"},"sha256":""}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodePreviewSummary(data)
		if err != nil {
			if s != nil {
				t.Fatalf("a refused record decoded as %+v", s)
			}
			return
		}
		if err := s.check(); err != nil {
			t.Fatalf("accepted an invalid summary: %v", err)
		}
		again, _, err := seal("preview", s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := decodePreviewSummary(again)
		if err != nil {
			t.Fatalf("re-sealed summary refused: %v", err)
		}
		if d := cmp.Diff(s, s2); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
		self := diffSummaries(s, s)
		if len(self.FilesAdded)+len(self.FilesRemoved)+len(self.FilesChanged)+len(self.PeersAdded)+len(self.PeersRemoved)+
			len(self.PeersChanged) != 0 || self.Head != nil || self.Claim != nil || self.Released != nil || self.Branch != nil ||
			self.AdminEntry != nil || self.Pinned != nil {
			t.Fatalf("a summary differs from itself: %+v", self)
		}
		_ = diffSummaries(s, testSummary()).String()
		_ = diffSummaries(testSummary(), s).String()
	})
}

func TestDiffSummaries(t *testing.T) {
	t.Parallel()
	old := testSummary()
	cur := testSummary()
	cur.Files = []summaryFile{{Path: "a.txt", State: "tracked M."}, {Path: "b.txt", State: "untracked"},
		{Path: "new.txt", State: "tracked R.", From: "older.txt"}}
	cur.Peers = []Peer{{Kind: "workspace", Path: "/w/T-3", Binding: "T-3", Relation: "disjoint"}}
	cur.Head = strings.Repeat("2", 40)
	c := diffSummaries(old, cur)
	want := &PreviewChanges{FilesAdded: []string{"b.txt"}, FilesRemoved: []string{"notes.txt"},
		FilesChanged: []FileChange{{"a.txt", "tracked .M", "tracked M."}, {"new.txt", "tracked R. from old.txt", "tracked R. from older.txt"}},
		FilesListed:  true,
		PeersAdded:   []Peer{cur.Peers[0]}, PeersRemoved: []Peer{old.Peers[0]}, PeersChanged: []Peer{},
		Head: &ValueChange{old.Head, cur.Head}}
	want.Counts.Files, want.Counts.Peers = CountChange{3, 3}, CountChange{1, 1}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("diff (-want +got):\n%s", d)
	}
	for _, s := range []string{"1 file added (b.txt)", "1 file no longer there (notes.txt)", "a.txt: tracked .M → tracked M.",
		"peer workspace T-3 at /w/T-3 added", "peer workspace T-2 at /w/T-2 gone", "HEAD moved from 111111111111 to 222222222222"} {
		if !strings.Contains(c.String(), s) {
			t.Errorf("%q does not say %q", c, s)
		}
	}

	// A preview that listed too many files to name compares counts only.
	cur.FilesTotal = 5000
	c = diffSummaries(old, cur)
	if c.FilesListed || len(c.FilesAdded)+len(c.FilesRemoved)+len(c.FilesChanged) != 0 ||
		!strings.Contains(c.String(), "5000 files instead of 3") {
		t.Errorf("truncated listing: %+v, %s", c, c)
	}
}

// Summaries are kept for a day at most, the newest previewKeep per
// binding; abandoned temporary files go once old.
func TestPrunePreviews(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	var want []string
	touch := func(name string, age time.Duration) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range previewKeep + 4 {
		name := strings.Repeat(string(rune('a'+i)), 3) + ".preview"
		touch(name, time.Duration(i)*time.Minute)
		if i < previewKeep {
			want = append(want, name)
		}
	}
	touch("zzz.preview", 0) // young, but ...
	touch("old.preview", previewMaxAge+time.Minute)
	touch(".old.preview.tmp", previewMaxAge+time.Minute)
	touch(".young.preview.tmp", time.Minute)
	touch("unrelated", previewMaxAge+time.Minute)
	// zzz is the newest: it stays, and the oldest of the others goes.
	want = append([]string{"zzz.preview"}, want[:previewKeep-1]...)
	want = append(want, ".young.preview.tmp", "unrelated")

	prunePreviews(dir, now)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("after pruning (-want +got):\n%s", d)
	}
}

func TestCheckDigest(t *testing.T) {
	t.Parallel()
	for d, ok := range map[string]bool{
		"sha256:" + strings.Repeat("0a", 32):        true,
		"sha256:" + strings.Repeat("0A", 32):        false,
		"sha256:" + strings.Repeat("0a", 31):        false,
		"sha256:" + strings.Repeat("0a", 32) + "0":  false,
		"SHA256:" + strings.Repeat("0a", 32):        false,
		" sha256:" + strings.Repeat("0a", 32):       false,
		"sha1:" + strings.Repeat("0a", 32):          false,
		"":                                          false,
		"sha256:" + strings.Repeat("0a", 31) + "0g": false,
	} {
		if err := CheckDigest(d); (err == nil) != ok {
			t.Errorf("CheckDigest(%q) = %v, want ok %v", d, err, ok)
		}
	}
}
