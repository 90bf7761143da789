package provider

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
)

// TestReclaimTrashGoingAtOnce: on a disk below trash.min_free (or with a
// trash over trash.max_bytes), reclaim --yes answered trash_kept_until
// tomorrow, and the purge the command starts right after deleted the
// trash, ignored files included. Now the preview says the trash goes at
// once (covered by its digest); a reclaim not confirmed by such a
// preview refuses, changing nothing, while the workspace holds ignored
// files; a confirmed one, or one with nothing salvage does not keep,
// deletes the trash itself and says why, promising nothing.
func TestReclaimTrashGoingAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value string }{
		{PolicyTrashMaxBytes, "1"},
		{PolicyTrashMinFree, "100%"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			_, p, _ := undoProvider(t)
			if _, err := p.SetTrashPolicy(tc.key, tc.value); err != nil {
				t.Fatal(err)
			}
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			ws.WriteFile(".env", "SECRET=1\n")

			_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			var pe *Error
			if !errors.Is(err, ErrUnconfirmed) || !errors.As(err, &pe) || pe.Details["trash_key"] != tc.key ||
				!strings.Contains(err.Error(), ".env") || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("reclaim --yes: %v, want unconfirmed naming .env and %s", err, tc.key)
			}
			if got := ws.ReadFile(".env"); got != "SECRET=1\n" {
				t.Fatalf(".env is %q after the refusal", got)
			}

			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pv.TrashGoesAtOnce, tc.key) || !strings.Contains(pv.Steps[len(pv.Steps)-1].Detail, "at once") {
				t.Fatalf("preview: trash_goes_at_once %q, last step %+v: want it to say the trash goes at once, naming %s",
					pv.TrashGoesAtOnce, pv.Steps[len(pv.Steps)-1], tc.key)
			}
			// The sizes it names change with every write to the disk: the
			// digest covers the key only, or a confirmation would go stale.
			other := *pv
			other.TrashGoesAtOnce = "other sizes, " + tc.key
			if pv.digestWithout(nil) != other.digestWithout(nil) || strings.Contains(pv.Steps[len(pv.Steps)-1].Detail, pv.TrashGoesAtOnce) {
				t.Errorf("the digest covers the sizes of trash_goes_at_once (%q)", pv.TrashGoesAtOnce)
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if res.TrashKeptUntil != nil || res.TrashPath != "" || !strings.Contains(res.TrashNotKept, tc.key) || !slices.Contains(res.StepsDone, "delete-trash") {
				t.Fatalf("confirmed reclaim: %+v, want the trash deleted at once and trash_not_kept naming %s", res, tc.key)
			}

			// Nothing salvage does not keep: reclaimed, the trash not promised.
			w2 := mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
			res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-2", Yes: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.TrashKeptUntil != nil || res.TrashNotKept == "" {
				t.Fatalf("reclaim --yes of a clean workspace: %+v, want the trash not kept, and why", res)
			}
			if _, err := os.Lstat(w2.Path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %v", w2.Path, err)
			}

			// A folder gone at the reclaim: git's entry of it is not
			// promised either.
			w3 := mustAllocate(t, p, AllocateOptions{Binding: "T-3"})
			if err := os.RemoveAll(w3.Path); err != nil {
				t.Fatal(err)
			}
			res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-3", Yes: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.TrashKeptUntil != nil || res.TrashPath != "" || !strings.Contains(res.TrashNotKept, tc.key) {
				t.Fatalf("reclaim of a workspace whose folder is gone: %+v, want git's entry not kept, and why", res)
			}
		})
	}
}
