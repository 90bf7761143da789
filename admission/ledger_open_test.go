package admission

import (
	"path/filepath"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestConcurrentOpenOfNewLedger: sixteen processes open a repository's
// ledger for the first time at once (sixteen agents' first `lease
// acquire`). Switching the new file to WAL takes SQLite's exclusive lock,
// and a connection that meets another's lock while it holds a shared one
// is refused at once (SQLite's deadlock avoidance, which no busy timeout
// waits out). Every open must still succeed.
func TestConcurrentOpenOfNewLedger(t *testing.T) {
	t.Parallel()
	openers := startRacers(t, 16, "open", nil)
	for round := range fixtures.Rounds(10, 100) {
		ledger := filepath.Join(t.TempDir(), "admission.db")
		for i, r := range race(t, openers, func(int) racerJob { return racerJob{Ledger: ledger} }) {
			if !r.OK {
				t.Fatalf("round %d: opener %d of a new ledger failed: %+v", round, i, r)
			}
		}
	}
}
