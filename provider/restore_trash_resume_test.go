package provider

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
)

// TestRestoreFromTrashCrashResumes: restore --from-trash killed after it
// published its claim (the folder still in its trash) or after it moved
// the folder back (not yet recorded) left the binding with an unfinished
// claim that no command finished: allocate and a plain retry answered
// binding_live, the retry with its request id failed on a missing
// request file, and the kept trash carried the new claim's pin. A retry
// with the request id now finishes it: every file of the trash back at
// the workspace's path, on its branch, the old claim's trash recorded as
// restored; nothing is lost at any point.
func TestRestoreFromTrashCrashResumes(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	for _, fp := range []string{"restore/claimed", "restore/moved"} {
		t.Run(strings.ReplaceAll(fp, "/", "-"), func(t *testing.T) {
			t.Parallel()
			repo, p := peerProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			peerDirty(t, w.Path)
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			ws.WriteFile(".env", "SECRET=1\n")
			ttl := []string{envvar.ReservationTTL + "=2s"}
			if r := crashExec(t, bin, repo.Dir, nil, "workspace", "reclaim", "T-1", "--yes", "--json"); r.exit != 0 {
				t.Fatalf("reclaim\n%s", r)
			}
			recs := mustReadBinding(t, p, "T-1")
			whole := crashCaptureFiles(t, recs[0].Events[EventMoved].TrashPath)
			reach := reachable(t, repo)

			crash := crashExec(t, bin, repo.Dir, append(ttl, "MAJLIS_FAILPOINTS="+fp+"=crash"),
				"workspace", "restore", "T-1", "--from-trash", "--request-id", "undo-1", "--json")
			if !crash.killed {
				t.Fatalf("the restore was not killed at %s\n%s", fp, crash)
			}
			held, err := p.leases.Inspect(reclaimPrefix + "T-1")
			if err != nil {
				t.Fatal(err)
			}
			crashWaitExpired(t, held.ExpiresAt)
			plain := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--from-trash", "--json")
			if plain.errorCode() != "binding_live" || !strings.Contains(plain.stdout, "undo-1") {
				t.Fatalf("a retry without the request id: want binding_live naming request undo-1\n%s", plain)
			}
			retry := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--from-trash", "--request-id", "undo-1", "--json")
			if retry.exit != 0 {
				t.Fatalf("the retry with the request id\n%s", retry)
			}
			if diff := cmp.Diff(whole, crashCaptureFiles(t, w.Path)); diff != "" {
				t.Errorf("restored from the trash (-before +after):\n%s", diff)
			}
			if got := ws.Git("symbolic-ref", "HEAD"); strings.TrimSpace(got) != "refs/heads/"+w.Branch {
				t.Errorf("restored HEAD is %q, want branch %s", got, w.Branch)
			}
			recs = mustReadBinding(t, p, "T-1")
			if len(recs) != 2 || !recs[0].has(EventPurged) || !recs[1].has(EventCreated) {
				t.Errorf("records after the retry: want the trash recorded restored and the new claim created")
			}
			after := reachable(t, repo)
			for id := range reach {
				if !after[id] {
					t.Errorf("commit %s was reachable before, not after", id)
				}
			}
			if again := crashExec(t, bin, repo.Dir, ttl, "workspace", "restore", "T-1", "--from-trash", "--request-id", "undo-1", "--json"); again.exit != 0 {
				t.Errorf("a second retry with the request id\n%s", again)
			}
		})
	}
}
