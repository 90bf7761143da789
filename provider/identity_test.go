package provider

// Reclaim acts only on its own workspace (issue 10): git's own view of the
// work tree must be the workspace's, git's admin entry must be the one
// allocated (pinned), and a lock majlis did not set is never lifted. Every
// refusal is checked against a full picture of the repository before and
// after: every file of every worktree, every ref, every lock and every
// admin entry.

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// An identityWorld is a peerWorld plus git's admin entries and shared
// config, which carry the locks, the pins and per-worktree config.
type identityWorld struct {
	peerWorld
	Admin []string // every file below <common dir>/worktrees: name and content digest
}

func identityObserve(t *testing.T, p *Provider, repo *fixtures.Repo, dirs ...string) identityWorld {
	t.Helper()
	w := identityWorld{peerWorld: peerObserve(t, p, repo, dirs...)}
	common := repo.CommonDir()
	for _, root := range []string{filepath.Join(common, "worktrees"), filepath.Join(common, "config")} {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(common, path)
			if err != nil {
				w.Admin = append(w.Admin, fmt.Sprintf("%q error %v", rel, err))
				return nil
			}
			if d.IsDir() {
				w.Admin = append(w.Admin, fmt.Sprintf("%q dir", rel))
				return nil
			}
			b, err := os.ReadFile(path)
			w.Admin = append(w.Admin, fmt.Sprintf("%q %x %v", rel, sha256.Sum256(b), err))
			return nil
		})
	}
	return w
}

func identityUnchanged(t *testing.T, before, after identityWorld) {
	t.Helper()
	peerUnchanged(t, before.peerWorld, after.peerWorld)
	if strings.Join(before.Admin, "\n") != strings.Join(after.Admin, "\n") {
		t.Errorf("a refused reclaim changed git's admin entries or config:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before.Admin, "\n"), strings.Join(after.Admin, "\n"))
	}
}

// identityScene is a registered repository whose main worktree holds work
// of its own (an edit of a tracked file and an untracked file) and a dirty
// workspace T-1.
func identityScene(t *testing.T) (*fixtures.Repo, *Provider, *Workspace) {
	t.Helper()
	repo, p := peerProvider(t)
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, target.Path)
	repo.WriteFile("README.md", "# edited in the main worktree\n")
	repo.WriteFile("main-notes.txt", "untracked in the main worktree\n")
	return repo, p, target
}

// refuseEverywhere runs the preview, a confirmed reclaim and a --yes
// reclaim, and requires each to refuse with want; it returns the last
// refusal.
func refuseEverywhere(t *testing.T, p *Provider, binding string, want error) *Error {
	t.Helper()
	_, err := p.PreviewReclaim(t.Context(), binding)
	peerRefused(t, err, want)
	_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Confirm: "sha256:" + strings.Repeat("0", 64)})
	peerRefused(t, err, want)
	_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Yes: true, RequestID: "rc-refused"})
	pe := peerRefused(t, err, want)
	if pe.Hint == "" {
		t.Errorf("the refusal says nothing about what to do: %v", err)
	}
	if _, err := p.records.Request("rc-refused"); err == nil {
		t.Errorf("a refused reclaim recorded its request")
	}
	return pe
}

// A workspace whose own config makes git act on another directory (or on
// none) is refused before any effect, naming the setting; once the setting
// is gone, reclaim goes ahead and the main worktree keeps its work.
func TestReclaimWorktreeConfigMismatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key string
		value     func(repo *fixtures.Repo, other string) string
	}{
		{"core.worktree aimed at the main worktree", "core.worktree", func(repo *fixtures.Repo, _ string) string { return repo.Dir }},
		{"core.worktree aimed at another worktree", "core.worktree", func(_ *fixtures.Repo, other string) string { return other }},
		{"core.bare", "core.bare", func(*fixtures.Repo, string) string { return "true" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p, target := identityScene(t)
			other := repo.NewWorktree("other")
			other.WriteFile("other-notes.txt", "untracked in another worktree\n")
			ws := &fixtures.Repo{T: t, Dir: target.Path}
			value := tc.value(repo, other.Dir)
			ws.SetWorktreeConfig(tc.key, value)
			before := identityObserve(t, p, repo, target.Path, other.Dir)

			pe := refuseEverywhere(t, p, "T-1", ErrWorktreeConfig)
			if !strings.Contains(pe.Reason, tc.key) || !strings.Contains(pe.Reason, value) {
				t.Errorf("the refusal does not name the setting %s = %s: %v", tc.key, value, pe)
			}
			if !strings.Contains(pe.Hint, "--unset "+tc.key) {
				t.Errorf("the hint does not say how to remove the setting: %v", pe)
			}
			if pe.Details["setting"] != tc.key {
				t.Errorf("details %v do not name the setting", pe.Details)
			}
			identityUnchanged(t, before, identityObserve(t, p, repo, target.Path, other.Dir))
			peerNoLease(t, p)

			ws.Git("config", "--worktree", "--unset", tc.key)
			mainBefore := peerTree(t, repo.Dir)
			otherBefore := peerTree(t, other.Dir)
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			if err != nil {
				t.Fatalf("reclaim once the setting is gone: %v", err)
			}
			peerReclaimed(t, p, repo, target, res)
			if got := repo.Git("show", *res.SalvageRef+":notes.txt"); got != "untracked notes\n" {
				t.Errorf("the salvage holds notes.txt %q, want the workspace's", got)
			}
			if _, err := repo.TryGit("show", *res.SalvageRef+":main-notes.txt"); err == nil {
				t.Errorf("the salvage holds the main worktree's untracked file")
			}
			if diff := cmpLines(mainBefore, peerTree(t, repo.Dir)); diff != "" {
				t.Errorf("the main worktree changed:\n%s", diff)
			}
			if diff := cmpLines(otherBefore, peerTree(t, other.Dir)); diff != "" {
				t.Errorf("the other worktree changed:\n%s", diff)
			}
		})
	}
}

func cmpLines(a, b []string) string {
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return ""
	}
	return "before:\n" + strings.Join(a, "\n") + "\nafter:\n" + strings.Join(b, "\n")
}

// The setting can appear after the preview, or during the reclaim: the
// checks before every step see it.
func TestReclaimWorktreeConfigRechecked(t *testing.T) {
	t.Parallel()
	repo, p, target := identityScene(t)
	pv, err := p.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	ws := &fixtures.Repo{T: t, Dir: target.Path}
	ws.SetWorktreeConfig("core.worktree", repo.Dir)
	before := identityObserve(t, p, repo, target.Path)
	_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
	peerRefused(t, err, ErrWorktreeConfig)
	identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))
	peerNoLease(t, p)

	// Between two destructive steps: the re-check refuses.
	ws.Git("config", "--worktree", "--unset", "core.worktree")
	rec := peerCurrent(t, p, "T-1")
	lease, err := p.reserve(t.Context(), rec, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	if err := p.recheck(t.Context(), rec, lease); err != nil {
		t.Fatalf("recheck of an intact workspace: %v", err)
	}
	ws.SetWorktreeConfig("core.bare", "true")
	peerRefused(t, p.recheck(t.Context(), rec, lease), ErrWorktreeConfig)
}

// Allocation pins git's admin entry with the claim digest and locks it
// with majlis's exact reason.
func TestAllocatePinsAdminEntry(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	admin := fixtures.AdminDir(t, ws.Path)
	if pin, err := gitops.ReadEntryPin(admin); err != nil || pin != ws.ClaimDigest {
		t.Errorf("pin %q, %v; want the claim digest %s", pin, err, ws.ClaimDigest)
	}
	lock, err := gitops.ReadWorktreeLock(admin)
	if want := "majlis workspace T-1 (claim " + shortDigest(ws.ClaimDigest) + ")"; err != nil || !lock.Locked || lock.Reason != want {
		t.Errorf("lock %+v, %v; want %q", lock, err, want)
	}
}

// A worktree that someone else added at the workspace's path after git
// pruned its entry (same entry name; with a file system that reuses inode
// numbers, the same inode too) is not the workspace: it has no pin.
func TestReclaimReAddedWorktree(t *testing.T) {
	t.Parallel()
	for _, sameDir := range []bool{true, false} {
		t.Run(fmt.Sprintf("same directory %v", sameDir), func(t *testing.T) {
			repo, p, target := identityScene(t)
			admin := fixtures.AdminDir(t, target.Path)
			theirs := repo.ReAddWorktree(target.Path, sameDir)
			theirs.WriteFile("theirs.txt", "someone else's work\n")
			theirs.WriteFile("README.md", "# their edit\n")
			if fixtures.AdminDir(t, theirs.Dir) != admin {
				t.Fatalf("the re-added worktree has another entry name")
			}
			if sameDir {
				id, err := pathid.Lstat(target.Path)
				ev := peerCurrent(t, p, "T-1").Events[EventCreated]
				if err != nil || id.Dev != ev.Dev || id.Ino != ev.Ino {
					t.Fatalf("the fixture did not keep the directory's identity: %v %v", id, err)
				}
			}
			before := identityObserve(t, p, repo, target.Path)
			pe := refuseEverywhere(t, p, "T-1", ErrIdentity)
			if !strings.Contains(pe.Reason, "pin") && sameDir {
				t.Errorf("the refusal does not say the entry is not the one allocated: %v", pe)
			}
			identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))
			peerNoLease(t, p)
		})
	}

	// The re-added worktree's directory is gone too: git lists an entry
	// at the path, but not the workspace's. Forget leaves it alone.
	t.Run("directory gone again", func(t *testing.T) {
		repo, p, target := identityScene(t)
		repo.ReAddWorktree(target.Path, false)
		if err := os.RemoveAll(target.Path); err != nil {
			t.Fatal(err)
		}
		before := identityObserve(t, p, repo)
		pe := refuseEverywhere(t, p, "T-1", ErrIdentity)
		if !strings.Contains(pe.Hint, "git worktree prune") {
			t.Errorf("the hint does not say how to drop the entry that is not the workspace's: %v", pe)
		}
		identityUnchanged(t, before, identityObserve(t, p, repo))
		peerNoLease(t, p)
	})
}

// A lock majlis did not set is never lifted, with the directory there or
// not: reclaim and forget refuse (locked), and say how to hand the
// workspace back.
func TestReclaimForeignLock(t *testing.T) {
	t.Parallel()
	for _, reason := range []string{"user: keep this", ""} {
		t.Run(fmt.Sprintf("directory present, reason %q", reason), func(t *testing.T) {
			repo, p, target := identityScene(t)
			repo.LockWorktree(target.Path, reason)
			before := identityObserve(t, p, repo, target.Path)
			pe := refuseEverywhere(t, p, "T-1", ErrLocked)
			if got, ok := pe.Details["lock_reason"]; !ok || got != reason {
				t.Errorf("details %v, want lock_reason %q", pe.Details, reason)
			}
			if !strings.Contains(pe.Hint, "git worktree unlock") {
				t.Errorf("the hint does not say how to hand the workspace back: %v", pe)
			}
			identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))
			peerNoLease(t, p)

			// Handed back: the owner of the lock lifts it.
			repo.UnlockWorktree(target.Path)
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
			if err != nil {
				t.Fatalf("reclaim once the lock is lifted: %v", err)
			}
			peerReclaimed(t, p, repo, target, res)
		})

		t.Run(fmt.Sprintf("directory absent, reason %q", reason), func(t *testing.T) {
			repo, p, target := identityScene(t)
			ws := &fixtures.Repo{T: t, Dir: target.Path}
			ws.WriteFile("staged-on-media.txt", "staged work\n")
			ws.Git("add", "staged-on-media.txt")
			repo.LockWorktree(target.Path, reason)
			// "on removable media": the directory is away for a while.
			away := filepath.Join(fixtures.TempDir(t), "media")
			if err := os.Rename(target.Path, away); err != nil {
				t.Fatal(err)
			}
			before := identityObserve(t, p, repo, away)
			pe := refuseEverywhere(t, p, "T-1", ErrLocked)
			if got, ok := pe.Details["lock_reason"]; !ok || got != reason {
				t.Errorf("details %v, want lock_reason %q", pe.Details, reason)
			}
			identityUnchanged(t, before, identityObserve(t, p, repo, away))
			peerNoLease(t, p)

			// Back from the media, it is still a worktree with its staged work.
			if err := os.Rename(away, target.Path); err != nil {
				t.Fatal(err)
			}
			if got := ws.Git("diff", "--cached", "--name-only"); !strings.Contains(got, "staged-on-media.txt") {
				t.Errorf("the staged work is gone: %q", got)
			}
		})
	}

	t.Run("majlis's lock lifted by hand: forget goes ahead", func(t *testing.T) {
		repo, p, target := identityScene(t)
		repo.UnlockWorktree(target.Path)
		if err := os.RemoveAll(target.Path); err != nil {
			t.Fatal(err)
		}
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		// What git's entry holds (the scene's staged work) is salvaged
		// first (entryaside.go).
		if steps := strings.Join(res.StepsDone, " "); !strings.Contains(" "+steps+" ", " forget ") {
			t.Errorf("steps %v, want forget (after salvage, before keep-trash)", res.StepsDone)
		}
		if list := repo.Git("worktree", "list", "--porcelain"); strings.Contains(list, target.PhysicalPath+"\n") {
			t.Errorf("the entry is still listed:\n%s", list)
		}
	})
}

// A workspace allocated before majlis pinned admin entries has no pin. It
// is pinned on first contact, by a reclaim that goes ahead, when majlis's
// own lock for that very claim is on the entry (git cannot prune a locked
// entry, so a worktree added later at the path cannot carry it) and every
// other check passes. The preview says so; a refusal pins nothing.
func TestReclaimWorkspaceWithoutPin(t *testing.T) {
	t.Parallel()
	unpin := func(t *testing.T, target *Workspace) string {
		admin := fixtures.AdminDir(t, target.Path)
		if err := os.Remove(filepath.Join(admin, "majlis-claim")); err != nil {
			t.Fatal(err)
		}
		return admin
	}
	for _, tc := range []struct {
		name string
		lock func(repo *fixtures.Repo, target *Workspace)
	}{
		{"majlis's lock", func(*fixtures.Repo, *Workspace) {}},
		{"majlis's lock of an interrupted reclaim", func(repo *fixtures.Repo, target *Workspace) {
			repo.LockWorktree(target.Path, "majlis workspace T-1 (reclaim interrupted)")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p, target := identityScene(t)
			admin := unpin(t, target)
			tc.lock(repo, target)
			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			if pv.AdminEntry.Pinned || pv.AdminEntry.Path != admin {
				t.Errorf("preview admin entry %+v, want %s, not pinned", pv.AdminEntry, admin)
			}
			// A stale confirmation refuses and pins nothing.
			before := identityObserve(t, p, repo, target.Path)
			_, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: "sha256:" + strings.Repeat("0", 64)})
			peerRefused(t, err, ErrPreviewStale)
			identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))

			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if !res.PinnedOnFirstContact {
				t.Errorf("the result does not report the pinning: %+v", res)
			}
			peerReclaimed(t, p, repo, target, res)
		})
	}

	t.Run("no lock of majlis's: refused", func(t *testing.T) {
		repo, p, target := identityScene(t)
		unpin(t, target)
		repo.UnlockWorktree(target.Path)
		before := identityObserve(t, p, repo, target.Path)
		pe := refuseEverywhere(t, p, "T-1", ErrIdentity)
		want := "majlis workspace T-1 (claim " + shortDigest(target.ClaimDigest) + ")"
		if !strings.Contains(pe.Hint, want) {
			t.Errorf("the hint does not give the lock that pins it on first contact (%q): %v", want, pe)
		}
		identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))
		peerNoLease(t, p)

		// Following the hint.
		repo.LockWorktree(target.Path, want)
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		peerReclaimed(t, p, repo, target, res)
	})

	t.Run("directory absent, majlis's lock: forget", func(t *testing.T) {
		repo, p, target := identityScene(t)
		unpin(t, target)
		if err := os.RemoveAll(target.Path); err != nil {
			t.Fatal(err)
		}
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if err != nil {
			t.Fatal(err)
		}
		// What git's entry holds (the scene's staged work) is salvaged
		// first (entryaside.go).
		if steps := strings.Join(res.StepsDone, " "); !strings.Contains(" "+steps+" ", " forget ") {
			t.Errorf("steps %v, want forget (after salvage, before keep-trash)", res.StepsDone)
		}
		if list := repo.Git("worktree", "list", "--porcelain"); strings.Contains(list, target.PhysicalPath+"\n") {
			t.Errorf("the entry is still listed:\n%s", list)
		}
	})
}

// A pin with another claim's digest is another workspace's entry.
func TestReclaimPinOfAnotherClaim(t *testing.T) {
	t.Parallel()
	repo, p, target := identityScene(t)
	admin := fixtures.AdminDir(t, target.Path)
	if err := os.WriteFile(filepath.Join(admin, "majlis-claim"), []byte("sha256:"+strings.Repeat("1", 64)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := identityObserve(t, p, repo, target.Path)
	refuseEverywhere(t, p, "T-1", ErrIdentity)
	identityUnchanged(t, before, identityObserve(t, p, repo, target.Path))
}

// A bare main repository (core.bare = true in the shared config, which git
// ignores for linked worktrees) and a separate git dir are no mismatch:
// their workspaces are reclaimed as any other.
func TestReclaimBareAndSeparateGitDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func(t *testing.T) string // returns a directory of the repository
	}{
		{"bare main repository", func(t *testing.T) string {
			src := fixtures.NewRepo(t)
			bare := filepath.Join(fixtures.TempDir(t), "app.git")
			fixtures.Git(t, src.Dir, "clone", "--quiet", "--bare", src.Dir, bare)
			// majlis is run from a worktree of it.
			wt := filepath.Join(fixtures.TempDir(t), "main-wt")
			fixtures.Git(t, bare, "worktree", "add", "--quiet", wt)
			return wt
		}},
		{"separate git dir", func(t *testing.T) string {
			dir := filepath.Join(fixtures.TempDir(t), "app")
			fixtures.Git(t, fixtures.TempDir(t), "init", "--quiet", "--initial-branch=main", "--separate-git-dir", filepath.Join(fixtures.TempDir(t), "app.git"), dir)
			r := &fixtures.Repo{T: t, Dir: dir}
			r.WriteFile("README.md", "# app\n")
			r.Commit("initial")
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			if _, err := Init(t.Context(), dir, InitOptions{WorkspaceRoot: filepath.Join(fixtures.TempDir(t), "ws")}); err != nil {
				t.Fatal(err)
			}
			p, err := Open(t.Context(), dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: target.Path}
			ws.WriteFile("notes.txt", "untracked\n")
			pv, err := p.PreviewReclaim(t.Context(), "T-1")
			if err != nil {
				t.Fatal(err)
			}
			if !pv.AdminEntry.Pinned {
				t.Errorf("admin entry %+v not pinned", pv.AdminEntry)
			}
			res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Confirm: pv.Digest})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Removed || res.SalvageRef == nil {
				t.Errorf("result %+v", res)
			}
			if _, err := os.Lstat(target.Path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("workspace left: %v", err)
			}
		})
	}
}

// GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE set by the caller (a git hook
// or alias running majlis) aimed at the main worktree change nothing:
// reclaim acts on the workspace.
func TestReclaimIgnoresCallersGitEnvironment(t *testing.T) {
	repo, p, target := identityScene(t)
	mainBefore := peerTree(t, repo.Dir)
	common := repo.CommonDir()
	env := map[string]string{"GIT_DIR": common, "GIT_WORK_TREE": repo.Dir, "GIT_INDEX_FILE": filepath.Join(common, "index")}
	for k, v := range env {
		t.Setenv(k, v) // restored when the test ends
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	for k := range env {
		os.Unsetenv(k) // fixtures' plain git below must not see them
	}
	if err != nil {
		t.Fatal(err)
	}
	peerReclaimed(t, p, repo, target, res)
	if diff := cmpLines(mainBefore, peerTree(t, repo.Dir)); diff != "" {
		t.Errorf("the main worktree changed:\n%s", diff)
	}
	if got := repo.Git("status", "--porcelain"); !strings.Contains(got, "main-notes.txt") || !strings.Contains(got, "README.md") {
		t.Errorf("the main worktree lost its work: %q", got)
	}
}

// A .git file cross-linked to a sibling's entry, whose back-pointer was
// rewritten to match (a `git worktree repair` gone wrong, or a hand edit):
// the .git file and the back-pointer agree, but the entry has no pin.
func TestReclaimCrossLinkedEntry(t *testing.T) {
	t.Parallel()
	repo, p, target := identityScene(t)
	sibling := repo.NewWorktree("sibling")
	sibling.WriteFile("sibling-notes.txt", "the sibling's work\n")
	admin := fixtures.AdminDir(t, sibling.Dir)
	if err := os.WriteFile(filepath.Join(target.Path, ".git"), []byte("gitdir: "+admin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(admin, "gitdir"), []byte(filepath.Join(target.Path, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := identityObserve(t, p, repo, target.Path, sibling.Dir)
	pe := refuseEverywhere(t, p, "T-1", ErrIdentity)
	if pe.Details["admin_entry"] != admin {
		t.Errorf("details %v do not name the entry %s", pe.Details, admin)
	}
	identityUnchanged(t, before, identityObserve(t, p, repo, target.Path, sibling.Dir))
	peerNoLease(t, p)
}

// The checks before every destructive step see a lock or a lost pin that
// appeared after the reclaim began.
func TestReclaimRecheckSeesLockAndPin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, repo *fixtures.Repo, target *Workspace)
		want   error
	}{
		{"someone locks it", func(t *testing.T, repo *fixtures.Repo, target *Workspace) {
			repo.LockWorktree(target.Path, "user: mine now")
		}, ErrLocked},
		{"the pin is gone", func(t *testing.T, repo *fixtures.Repo, target *Workspace) {
			if err := os.Remove(filepath.Join(fixtures.AdminDir(t, target.Path), "majlis-claim")); err != nil {
				t.Fatal(err)
			}
		}, ErrIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p, target := identityScene(t)
			rec := peerCurrent(t, p, "T-1")
			lease, err := p.reserve(t.Context(), rec, "")
			if err != nil {
				t.Fatal(err)
			}
			defer lease.Release()
			if err := p.recheck(t.Context(), rec, lease); err != nil {
				t.Fatalf("recheck of an intact workspace: %v", err)
			}
			tc.change(t, repo, target)
			peerRefused(t, p.recheck(t.Context(), rec, lease), tc.want)
		})
	}
}
