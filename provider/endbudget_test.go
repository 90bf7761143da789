package provider

import (
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestEndReclaimIgnoredFilesTrashGoingAtOnce: end --reclaim reclaims a
// workspace holding ignored files only because its trash is kept; when
// the policy would purge that trash as soon as the purge runs (started
// by the command right after: its size over trash.max_bytes, or a disk
// below trash.min_free, as on a nearly full laptop), it deleted the
// .env while answering kept_in_trash. It now leaves the workspace, and
// says why.
func TestEndReclaimIgnoredFilesTrashGoingAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value, says string }{
		{PolicyTrashMaxBytes, "1", "trash.max_bytes"},
		{PolicyTrashMinFree, "100%", "trash.min_free"},
	} {
		t.Run(tc.says, func(t *testing.T) {
			t.Parallel()
			_, p, _ := undoProvider(t)
			if _, err := p.SetTrashPolicy(tc.key, tc.value); err != nil {
				t.Fatal(err)
			}
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			ws.WriteFile(".env", "SECRET=1\n")
			res, err := p.End(t.Context(), EndOptions{Binding: "T-1", Reclaim: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reclaimed != nil || res.Ignored != IgnoredLeft || res.NotReclaimed == nil ||
				!strings.Contains(res.NotReclaimed.Error(), tc.says) || !strings.Contains(res.NotReclaimed.Error(), ".env") {
				t.Fatalf("end --reclaim: %+v (not reclaimed: %v), want it left, naming .env and %s", res, res.NotReclaimed, tc.says)
			}
			if got := ws.ReadFile(".env"); got != "SECRET=1\n" {
				t.Errorf(".env is %q", got)
			}
		})
	}
}
