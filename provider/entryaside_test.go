package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// entryHeld is a workspace holding, in git's entry only once its folder
// is gone, every kind of thing a removal of the entry would lose.
type entryHeld struct {
	detached, worktreeRef, bisect, reflogOnly string // commits
	staged                                    string // a blob only the index holds
}

func makeEntryHeld(t *testing.T, ws *fixtures.Repo, branch string) entryHeld {
	t.Helper()
	var s entryHeld
	s.reflogOnly = ws.ReflogOnlyCommit(branch, "l.txt", "only HEAD's reflog\n")
	s.worktreeRef = ws.WorktreeRefCommit(branch, "refs/worktree/keep", "w.txt", "a worktree ref\n")
	s.bisect = ws.WorktreeRefCommit(branch, "refs/bisect/bad", "b.txt", "bisect\n")
	s.detached = ws.DetachedCommit("d.txt", "detached\n")
	s.staged = ws.PartialStage("README.md", "staged, then the folder went\n", "in the folder\n")
	return s
}

func (s entryHeld) mustSurvive(t *testing.T, repo *fixtures.Repo) {
	t.Helper()
	for what, id := range map[string]string{"the detached HEAD's commit": s.detached, "the worktree ref's commit": s.worktreeRef,
		"the bisect ref's commit": s.bisect, "the commit only HEAD's reflog names": s.reflogOnly, "the staged blob": s.staged} {
		mustReach(t, repo, what, id)
	}
	if out, err := repo.TryGit("fsck", "--no-progress", "--no-dangling"); err != nil || strings.Contains(out, "dangling") {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// A workspace folder moved away or deleted by hand while git's entry of
// it remains (issue 24 item 1): the preview names what the entry holds,
// the reclaim salvages it before the entry goes, restore brings HEAD, the
// index and the per-worktree refs back; with the trash kept, the entry is
// kept aside (git no longer lists it) and a folder moved by hand can be
// attached to it again.
func TestReclaimMissingFolderKeepsWhatTheEntryHolds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		deleted bool
		keep    time.Duration
	}{
		{"moved away, trash kept", false, time.Hour},
		{"moved away, trash deleted", false, 0},
		{"deleted, trash deleted", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			s := makeEntryHeld(t, ws, w.Branch)
			entry := ws.GitDir()
			away := filepath.Join(fixtures.TempDir(t), "away")
			if tc.deleted {
				if err := os.RemoveAll(w.Path); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Rename(w.Path, away); err != nil {
				t.Fatal(err)
			}
			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			if pv.Salvage.Clean || len(pv.Salvage.Pins) < 2 || len(pv.Salvage.WorktreeRefs) != 2 || pv.Salvage.Modified != 1 ||
				len(pv.Steps) != 2 || pv.Steps[0].Name != "salvage" || pv.Steps[1].Name != "forget" {
				t.Fatalf("preview: clean %v pins %v refs %v modified %d steps %+v", pv.Salvage.Clean, pv.Salvage.Pins, pv.Salvage.WorktreeRefs, pv.Salvage.Modified, pv.Steps)
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest, KeepTrash: tc.keep, DeleteTrash: tc.keep == 0})
			if err != nil {
				t.Fatalf("reclaim: %v", err)
			}
			if res.SalvageRef == nil || !res.Removed || strings.Join(res.StepsDone, ",") != map[bool]string{true: "salvage,forget,keep-trash", false: "salvage,forget"}[tc.keep > 0] {
				t.Fatalf("result: %+v", res)
			}
			if res.Submodules == nil || res.SalvageRefs == nil || res.TrashPurged == nil || res.RecoveredLeases == nil {
				t.Errorf("result %+v: an array is null (salvaged_submodules, salvage_refs, trash_purged, recovered_leases)", res)
			}
			if strings.Contains(repo.Git("worktree", "list", "--porcelain"), "T-1") {
				t.Errorf("git still lists T-1")
			}
			s.mustSurvive(t, repo)
			aside := p.entryAsidePath(&mustReadBinding(t, p, "T-1")[0].Claim)
			_, err = os.Lstat(aside)
			if kept := err == nil; kept != (tc.keep > 0) {
				t.Fatalf("git's entry kept aside at %s: %v, want %v", aside, kept, tc.keep > 0)
			}
			if tc.keep > 0 {
				ev := mustReadBinding(t, p, "T-1")[0].Events[EventReclaimed]
				if ev.AdminKept != aside || ev.KeepUntil == nil || res.TrashKeptUntil == nil || !ev.KeepUntil.Equal(*res.TrashKeptUntil) {
					t.Errorf("reclaimed event: admin_kept %q keep_until %v; result %v", ev.AdminKept, ev.KeepUntil, res.TrashKeptUntil)
				}
				// The purge of the kept entry salvages it again first: read
				// where it is now (its commondir file is relative to where
				// it was).
				rec := mustReadBinding(t, p, "T-1")[0]
				again, err := p.salvageKeptEntry(t.Context(), rec, aside)
				if err != nil || again == "" {
					t.Fatalf("salvage of the kept entry: %q %v", again, err)
				}
				if got := strings.TrimSpace(repo.Git("rev-parse", again+"^1")); got != s.detached {
					t.Errorf("the kept entry's salvage is on %s, want HEAD %s", got, s.detached)
				}
				// Attached again: the entry back in git's list, git told
				// where the folder is now.
				if err := os.Rename(aside, entry); err != nil {
					t.Fatal(err)
				}
				repo.Git("worktree", "repair", away)
				back := &fixtures.Repo{T: t, Dir: away}
				if got := back.Head(); got != s.detached {
					t.Errorf("the folder attached again is at %s, want %s", got, s.detached)
				}
				if got := back.Git("show", ":README.md"); got != "staged, then the folder went\n" {
					t.Errorf("its index holds %q", got)
				}
				return
			}
			rr, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
			if err != nil {
				t.Fatal(err)
			}
			back := &fixtures.Repo{T: t, Dir: rr.Workspace.Path}
			if back.Head() != s.detached || back.Git("show", ":README.md") != "staged, then the folder went\n" ||
				back.ReadFile("README.md") != "staged, then the folder went\n" ||
				strings.TrimSpace(back.Git("rev-parse", "refs/worktree/keep")) != s.worktreeRef ||
				strings.TrimSpace(back.Git("rev-parse", "refs/bisect/bad")) != s.bisect {
				t.Errorf("restored: HEAD %s index %q refs %s", back.Head(), back.Git("show", ":README.md"),
					back.Git("for-each-ref", "refs/worktree", "refs/bisect"))
			}
		})
	}
}

// An entry that cannot be read refuses the preview and the reclaim,
// naming it; the entry, its lock and the claim stay.
func TestReclaimMissingFolderUnreadableEntryRefuses(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	detached := ws.DetachedCommit("d.txt", "detached\n")
	entry := ws.GitDir()
	if err := os.RemoveAll(w.Path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "HEAD"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := repo.Git("worktree", "list", "--porcelain")
	if _, err := p.PreviewReclaim(t.Context(), "T-1"); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), entry) {
		t.Errorf("preview: %v, want malformed naming %s", err, entry)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); !errors.Is(err, ErrMalformed) {
		t.Errorf("reclaim: %v, want malformed", err)
	}
	if got := repo.Git("worktree", "list", "--porcelain"); got != before || !strings.Contains(got, "locked majlis workspace T-1") {
		t.Errorf("the refused reclaim changed git's worktrees, or majlis's lock:\n%s\nwant\n%s", got, before)
	}
	if err := os.WriteFile(filepath.Join(entry, "HEAD"), []byte(detached+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true}); err != nil {
		t.Fatal(err)
	}
	mustReach(t, repo, "the detached commit", detached)
}
