package provider

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/pathid"
)

// TestAbsentNowTellsReusedInodesApart: file systems reuse inode numbers,
// so a workspace restored or allocated at a reclaimed one's path often
// has the reclaimed directory's device and inode. Its pin (another
// claim's digest) is what shows the reclaimed workspace is gone; a
// directory at the path with the same identity and no pin of another
// claim still counts as the reclaimed workspace, which keeps it a peer.
func TestAbsentNowTellsReusedInodesApart(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	ws, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := p.records.Binding("T-1")
	if err != nil || len(recs) != 1 {
		t.Fatalf("claims of T-1: %d, %v", len(recs), err)
	}
	own := recs[0].Digest
	id, err := pathid.Lstat(ws.Path)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	pid, err := pathid.Lstat(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		path     string
		dev, ino uint64
		digest   string
		absent   bool
	}{
		{"the workspace itself, pinned for its own claim", ws.Path, id.Dev, id.Ino, own, false},
		{"same identity, pinned for another claim", ws.Path, id.Dev, id.Ino, "sha256:0000000000000000000000000000000000000000000000000000000000000000", true},
		{"another identity", ws.Path, id.Dev, id.Ino + 1, own, true},
		{"nothing at the path", filepath.Join(plain, "gone"), id.Dev, id.Ino, own, true},
		{"same identity, not a worktree", plain, pid.Dev, pid.Ino, own, false},
		{"no identity recorded", ws.Path, 0, 0, "sha256:other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := absentNow(tc.path, tc.dev, tc.ino, tc.digest); got != tc.absent {
				t.Errorf("absentNow = %v, want %v", got, tc.absent)
			}
		})
	}
}
