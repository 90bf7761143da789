package main

import (
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/provider"
)

// TestPurgedNoteSaysEarlyOnce: list --all said "trash purged early:
// early: ..." of a trash purged for space.
func TestPurgedNoteSaysEarlyOnce(t *testing.T) {
	t.Parallel()
	for _, due := range []string{provider.DueBudget, provider.DueSpace} {
		got := purgedNote(&provider.Workspace{TrashPurged: due})
		if strings.Count(got, "early") != 1 || !strings.Contains(got, "trash purged early: ") {
			t.Errorf("%s: %q", due, got)
		}
	}
}
