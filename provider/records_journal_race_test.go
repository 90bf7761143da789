package provider

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The journal read while another process allocates: every read is
// usable. (The journal's line is written before the claim's folder, so a
// folder listed before the journal is read is always named in it; one
// listed after may be newer than the journal read, and made it
// "unusable", which sent a damaged binding's locator, and every check
// that needs it, to a refusal.)
func TestJournalReadDuringAllocations(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("allocates workspaces in another process")
	}
	repo, p := newProvider(t)
	c := startChild(t, "allocate-many", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=C",
		"MAJLIS_PATH="+filepath.Join(t.TempDir(), "ws"), "MAJLIS_COUNT=30",
		"MAJLIS_PROGRESS="+filepath.Join(t.TempDir(), "progress"))
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	reads := 0
	for exited := false; !exited; reads++ {
		select {
		case <-done:
			exited = true
		default:
		}
		if _, err := p.records.Journal(); err != nil {
			t.Fatalf("read %d of the journal during allocations: %v", reads, err)
		}
	}
	if r := result(c); !r.OK {
		t.Fatalf("the allocating process failed: %+v", r)
	}
	t.Log(fmt.Sprintf("%d reads", reads))
}
