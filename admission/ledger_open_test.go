package admission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConcurrentOpenOfNewLedger: sixteen processes open a repository's
// ledger for the first time at once (sixteen agents' first `lease
// acquire`). Switching the new file to WAL takes SQLite's exclusive lock,
// and a connection that meets another's lock while it holds a shared one
// is refused at once (SQLite's deadlock avoidance, which no busy timeout
// waits out). Every open must still succeed.
func TestConcurrentOpenOfNewLedger(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		dir := t.TempDir()
		ledger, start := filepath.Join(dir, "admission.db"), filepath.Join(dir, "start")
		children := make([]*child, 16)
		for i := range children {
			children[i] = startChild(t, "open", "MAJLIS_LEDGER="+ledger, "MAJLIS_START="+start)
		}
		if err := os.WriteFile(start, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for i, c := range children {
			c.stdin.Close()
			if err := c.cmd.Wait(); err != nil {
				t.Fatalf("round %d: opener %d: %v", round, i, err)
			}
			var r childResult
			if err := json.Unmarshal([]byte(strings.TrimSpace(c.out.String())), &r); err != nil || !r.OK {
				t.Fatalf("round %d: opener %d of a new ledger failed: %s", round, i, c.out.String())
			}
		}
	}
}
