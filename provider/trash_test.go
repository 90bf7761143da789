package provider

// Tests of reclaim's move into the trash (trash.go): a writer that keeps
// writing through the whole reclaim loses nothing; a directory swapped in
// at the path between the last check and the rename is not touched; and
// workspaces with submodules, locked ones and ones under a symlinked
// folder are moved and deleted correctly, or refused with nothing changed.

import (
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/envvar"
)

// trashLeft lists trash folders and set-aside admin entries left behind.
func trashLeft(t *testing.T, p *Provider, dirs ...string) []string {
	t.Helper()
	var left []string
	for _, d := range dirs {
		m, _ := filepath.Glob(filepath.Join(d, trashPrefix+"*"))
		left = append(left, m...)
	}
	m, _ := filepath.Glob(filepath.Join(p.stateDir, "trash", "*"))
	return append(left, m...)
}

// salvagedFiles maps every path on every salvage ref of binding to the
// blob ids it has on each (one git process per ref).
func salvagedFiles(t *testing.T, repo *fixtures.Repo, binding string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, ref := range strings.Fields(repo.Git("for-each-ref", "--format=%(refname)", SalvagePrefix+binding+"/")) {
		for _, rec := range strings.Split(repo.Git("ls-tree", "-r", "-z", ref), "\x00") {
			meta, name, ok := strings.Cut(rec, "\t")
			if f := strings.Fields(meta); ok && len(f) == 3 {
				out[name] = append(out[name], f[2])
			}
		}
	}
	return out
}

// blobID is git's SHA-1 id of a blob with content.
func blobID(content string) string {
	return fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(content), content))))
}

// TestReclaimConcurrentWriter: a writer that creates a file every 2 ms in
// the workspace for the whole reclaim, which nobody told majlis about (no
// owner pid, no lease). Over 50 reclaims, every file it created is
// afterwards on a salvage ref of the workspace with the content it wrote
// (nothing is at the old path: the writer does not create folders, so its
// writes fail once the workspace is moved). Zero lost. No failpoints.
func TestReclaimConcurrentWriter(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	rounds, workers := fixtures.Rounds(20, 200), 2
	var mu sync.Mutex
	lostTotal, second := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		// Reclaims of different bindings run at once, each from its own
		// provider as separate processes would.
		pw, err := Open(t.Context(), repo.Dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pw.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := w; round < rounds; round += workers {
				lost, again := writerRound(t, repo, pw, fmt.Sprintf("W-%02d", round))
				mu.Lock()
				lostTotal += lost
				if again {
					second++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d reclaims, %d files lost; %d needed a second salvage ref", rounds, lostTotal, second)
	if left := trashLeft(t, p, p.reg.WorkspaceRoot); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	if out, err := repo.TryGit("fsck", "--no-progress", "--connectivity-only"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// writerRound allocates binding, starts a writer in it, reclaims it while
// the writer runs, and reports how many of the writer's files are neither
// at the old path nor on a salvage ref, and whether a second salvage ref
// was made. It runs on a goroutine: failures are Errorf.
func writerRound(t *testing.T, repo *fixtures.Repo, p *Provider, binding string) (lost int, second bool) {
	ws, err := p.Allocate(t.Context(), AllocateOptions{Binding: binding})
	if err != nil {
		t.Errorf("allocate %s: %v", binding, err)
		return 0, false
	}
	var (
		mu      sync.Mutex
		created = map[string]string{}
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("w-%05d.txt", i)
			content := fmt.Sprintf("%s file %d\n", binding, i)
			if err := os.WriteFile(filepath.Join(ws.Path, name), []byte(content), 0o644); err == nil {
				mu.Lock()
				created[name] = content
				mu.Unlock()
			}
		}
	}()
	// The writer is at work before the reclaim starts.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(created)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Yes: true, DeleteTrash: true})
	close(stop)
	<-done
	if err != nil {
		t.Errorf("%s: reclaim: %v", binding, err)
		return 0, false
	}
	if res.PathOccupied {
		t.Errorf("%s: something appeared at the old path", binding)
	}
	salvaged := salvagedFiles(t, repo, binding)
	for name, want := range created {
		if b, err := os.ReadFile(filepath.Join(ws.Path, name)); err == nil && string(b) == want {
			continue
		}
		found := false
		for _, got := range salvaged[name] {
			found = found || got == blobID(want)
		}
		if !found {
			lost++
			t.Errorf("%s: %s (written by the writer) is neither at %s nor on a salvage ref", binding, name, ws.Path)
		}
	}
	return lost, res.SecondSalvageRef != nil
}

// TestReclaimSwapBeforeMove: the reclaim pauses between its last check
// and the rename (failpoint reclaim/before-move); meanwhile T-1 is moved
// away and another worktree put at its path. The reclaim moves that
// worktree into the trash, finds it is not T-1, moves it back (the path is
// free) and refuses with identity_drift: every file of the other worktree
// is as it was, and git's entry of it too; T-1, where it was moved, is
// untouched; no trash is left.
func TestReclaimSwapBeforeMove(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	pause, reached, release := crashPause(t, "reclaim/before-move")
	proc := crashStart(t, bin, s.repo.Dir, pause, "workspace", "reclaim", "T-1", "--yes", "--request-id", "swap", "--json")
	reached()

	away := filepath.Join(fixtures.TempDir(t), "T-1-away")
	if err := os.Rename(s.target.Path, away); err != nil {
		t.Fatal(err)
	}
	t1 := crashCaptureFiles(t, away)
	// git refuses to add a worktree at the path of T-1's (locked) entry,
	// so the other worktree is added elsewhere, moved there and repaired.
	elsewhere := filepath.Join(fixtures.TempDir(t), "other")
	s.repo.AddWorktree(elsewhere, "other")
	if err := os.Rename(elsewhere, s.target.Path); err != nil {
		t.Fatal(err)
	}
	s.repo.Git("worktree", "repair", s.target.Path)
	other := &fixtures.Repo{T: t, Dir: s.target.Path}
	other.WriteFile("mine.txt", "the other worktree's work\n")
	otherAdmin := fixtures.AdminDir(t, other.Dir)
	otherGitdir, err := os.ReadFile(filepath.Join(otherAdmin, "gitdir"))
	if err != nil {
		t.Fatal(err)
	}
	before := crashCaptureDir(t, other.Dir)
	fiBefore, err := os.Lstat(other.Dir)
	if err != nil {
		t.Fatal(err)
	}
	release()
	r := proc.wait()
	if r.exit != 3 || r.errorCode() != "identity_drift" {
		t.Fatalf("reclaim after the swap: want exit 3, identity_drift\n%s", r)
	}
	if !strings.Contains(r.stdout, "moved back") {
		t.Errorf("the refusal does not say the directory was moved back\n%s", r)
	}
	if diff := cmp.Diff(before, crashCaptureDir(t, other.Dir)); diff != "" {
		t.Errorf("the other worktree changed (-before +after):\n%s", diff)
	}
	if fi, err := os.Lstat(other.Dir); err != nil || !os.SameFile(fi, fiBefore) {
		t.Errorf("the other worktree's directory is not back at its path: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(otherAdmin, "gitdir")); string(got) != string(otherGitdir) {
		t.Errorf("git's entry of the other worktree now points to %q, was %q", got, otherGitdir)
	}
	if diff := cmp.Diff(t1, crashCaptureFiles(t, away)); diff != "" {
		t.Errorf("T-1 changed where it was moved (-before +after):\n%s", diff)
	}
	if left := trashLeft(t, s.p, filepath.Dir(s.target.Path)); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	s.checkFsck(t, "after the refused reclaim")
}

// TestReclaimTrashStates: workspaces in states git allows, each moved into
// the trash and deleted, or refused with nothing changed.
func TestReclaimTrashStates(t *testing.T) {
	t.Parallel()
	t.Run("checked-out submodule", func(t *testing.T) {
		repo, p, target := submoduleWorkspace(t)
		ws := &fixtures.Repo{T: t, Dir: target.Path}
		ws.Git("-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--init")
		sub := &fixtures.Repo{T: t, Dir: ws.Path("lib")}
		sub.WriteFile("local.txt", "committed only here\n")
		local := sub.Commit("local only")
		admin := fixtures.AdminDir(t, target.Path)
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
		if err != nil {
			t.Fatalf("reclaim: %v", err)
		}
		peerReclaimed(t, p, repo, target, res)
		// The local commit moved the gitlink: that is salvaged first.
		if diff := cmp.Diff([]string{"salvage", "move", "delete-trash"}, res.StepsDone); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
		if got := strings.TrimSpace(repo.Git("rev-parse", "refs/majlis/salvage/T-1/modules/1/lib/HEAD")); got != local {
			t.Errorf("the submodule's local commit was not kept: %s, want %s", got, local)
		}
		if _, err := os.Lstat(admin); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("git's entry %s is left: %v", admin, err)
		}
		if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
			t.Errorf("trash left: %v", left)
		}
		if out, err := repo.TryGit("fsck", "--no-progress", "--connectivity-only"); err != nil {
			t.Errorf("fsck: %v\n%s", err, out)
		}
	})

	t.Run("locked by a person", func(t *testing.T) {
		repo, p := newProvider(t)
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
		peerDirty(t, target.Path)
		repo.LockWorktree(target.Path, "on removable media")
		before := peerObserve(t, p, repo, target.Path)
		_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("reclaim of a workspace locked by a person: %v, want ErrLocked", err)
		}
		peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
		if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
			t.Errorf("trash left: %v", left)
		}
		peerNoLease(t, p)
	})

	t.Run("parent folder is a symlink", func(t *testing.T) {
		repo, p := peerProvider(t)
		real := filepath.Join(fixtures.TempDir(t), "real-root")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(real, "keep.txt"), []byte("not the workspace's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(fixtures.TempDir(t), "linked-root")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		target := mustAllocate(t, p, AllocateOptions{Binding: "T-1", Path: filepath.Join(link, "T-1")})
		peerDirty(t, target.Path)
		res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, DeleteTrash: true})
		if err != nil {
			t.Fatalf("reclaim: %v", err)
		}
		peerReclaimed(t, p, repo, target, res)
		if got, err := os.Readlink(link); err != nil || got != real {
			t.Errorf("the symlinked folder changed: %q, %v", got, err)
		}
		entries, err := os.ReadDir(real)
		if err != nil || len(entries) != 1 || entries[0].Name() != "keep.txt" {
			t.Errorf("the folder behind the symlink holds %v (%v), want keep.txt only", entries, err)
		}
		if got := repo.Git("show", *res.SalvageRef+":notes.txt"); got != "untracked notes\n" {
			t.Errorf("salvage holds %q", got)
		}
	})
}

// TestReclaimKeepTrash: a reclaim with --keep-trash leaves the workspace
// in its trash folder, locked and listed by git there; restore
// --from-trash puts it back exactly as it was (files, ignored ones
// included, and the index); a later reclaim kept for a moment is purged
// by the next reclaim of another workspace, git's entry with it.
func TestReclaimKeepTrash(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, target.Path)
	before := peerObserve(t, p, repo, target.Path)

	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, KeepTrash: time.Hour})
	if err != nil {
		t.Fatalf("reclaim --keep-trash: %v", err)
	}
	if diff := cmp.Diff([]string{"salvage", "move", "keep-trash"}, res.StepsDone); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if res.TrashPath == "" || res.TrashKeptUntil == nil || !res.Removed {
		t.Fatalf("result %+v names no kept trash", res)
	}
	if filepath.Dir(res.TrashPath) != filepath.Dir(target.Path) || !strings.HasPrefix(filepath.Base(res.TrashPath), trashPrefix+"T-1.1.") {
		t.Errorf("trash folder %s is not beside the workspace", res.TrashPath)
	}
	if _, err := os.Lstat(target.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the workspace is still at its path: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(res.TrashPath, "build", "out.o")); err != nil || string(b) != "ignored build output\n" {
		t.Errorf("the kept trash lacks the ignored file: %q, %v", b, err)
	}
	wts := repo.Git("worktree", "list", "--porcelain")
	if !strings.Contains(wts, "worktree "+res.TrashPath+"\n") || !strings.Contains(wts, "locked majlis workspace T-1") {
		t.Errorf("git does not list the kept trash, locked:\n%s", wts)
	}
	all, err := p.List(t.Context(), ListOptions{All: true})
	if err != nil || len(all) != 1 || all[0].TrashPath != res.TrashPath || all[0].State != StateReclaimed {
		t.Fatalf("list --all: %+v, %v", all, err)
	}

	// Undo.
	ws, err := p.RestoreFromTrash(t.Context(), "T-1", "undo-1")
	if err != nil {
		t.Fatalf("restore --from-trash: %v", err)
	}
	if ws.Path != target.Path || ws.State != StateActive {
		t.Errorf("restored workspace %+v", ws)
	}
	after := peerObserve(t, p, repo, target.Path)
	if diff := cmp.Diff(before.Trees, after.Trees); diff != "" {
		t.Errorf("the restored workspace differs (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.Status, after.Status); diff != "" {
		t.Errorf("git status differs after the restore (-before +after):\n%s", diff)
	}
	if again, err := p.RestoreFromTrash(t.Context(), "T-1", "undo-1"); err != nil || again.Path != ws.Path {
		t.Errorf("a retry of the restore: %+v, %v", again, err)
	}
	if _, err := p.RestoreFromTrash(t.Context(), "T-1", "undo-2"); !errors.Is(err, ErrBindingLive) {
		t.Errorf("a restore of a live binding: %v, want ErrBindingLive", err)
	}
	if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
		t.Errorf("trash left after the restore: %v", left)
	}

	// Kept for a moment only: the next purge deletes it, and a reclaim
	// of another workspace leaves it to the purge.
	res, err = p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, KeepTrash: time.Nanosecond})
	if err != nil {
		t.Fatalf("second reclaim of T-1: %v", err)
	}
	kept := res.TrashPath
	mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
	res2, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-2", Yes: true, DeleteTrash: true})
	if err != nil {
		t.Fatalf("reclaim of T-2: %v", err)
	}
	if len(res2.TrashPurged) != 0 {
		t.Errorf("the reclaim of T-2 purged %v in its own time", res2.TrashPurged)
	}
	if _, err := os.Lstat(kept); err != nil {
		t.Errorf("the kept trash went with another reclaim: %v", err)
	}
	purged, err := p.PurgeDue(t.Context())
	if err != nil {
		t.Fatalf("purge: %v", err)
	}
	if len(purged.Purged) != 1 || purged.Purged[0].Path != kept || purged.Purged[0].Due != DueExpired || len(purged.Left) != 0 {
		t.Errorf("purge: %+v, want %s purged as expired", purged, kept)
	}
	if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
		t.Errorf("trash left after the purge: %v", left)
	}
	if wts := repo.Git("worktree", "list", "--porcelain"); strings.Contains(wts, trashPrefix) {
		t.Errorf("git still lists a trash folder:\n%s", wts)
	}
	if _, err := p.RestoreFromTrash(t.Context(), "T-1", "undo-3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a restore after the purge: %v, want ErrNotFound", err)
	}
	if out, err := repo.TryGit("fsck", "--no-progress", "--connectivity-only"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// TestReclaimPathReoccupied: a directory that appears at the workspace's
// path once the workspace has been moved (here while the reclaim pauses
// right after the rename) is someone else's: the reclaim finishes, leaves
// it as it is and reports it.
func TestReclaimPathReoccupied(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	pause, reached, release := crashPause(t, "reclaim/moved")
	proc := crashStart(t, bin, s.repo.Dir, pause, "workspace", "reclaim", "T-1", "--yes", "--json")
	reached()
	if err := os.MkdirAll(filepath.Join(s.target.Path, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.target.Path, "notes", "untracked.txt"), []byte("written after the move\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := crashCaptureFiles(t, s.target.Path)
	release()
	r := proc.wait()
	if r.exit != 0 {
		t.Fatalf("reclaim: want success\n%s", r)
	}
	var res struct {
		Reclaim ReclaimResult `json:"reclaim"`
	}
	r.decode(t, &res)
	if !res.Reclaim.PathOccupied || !res.Reclaim.Removed {
		t.Errorf("the result does not report what appeared at the path: %+v", res.Reclaim)
	}
	if diff := cmp.Diff(before, crashCaptureFiles(t, s.target.Path)); diff != "" {
		t.Errorf("what appeared at the path changed (-before +after):\n%s", diff)
	}
	if left := trashLeft(t, s.p, filepath.Dir(s.target.Path)); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	if res.Reclaim.SalvageRef == nil {
		t.Fatalf("no salvage ref: %+v", res.Reclaim)
	}
	if lack := s.refHoldsWork(t, *res.Reclaim.SalvageRef); lack != "" {
		t.Errorf("the salvage ref lacks %s", lack)
	}
}

// TestReclaimKeepTrashCrash: the decision to keep the trash is recorded
// (the checked event) before it is acted on: a reclaim --keep-trash killed
// after that is finished by a retry that keeps it, whatever the retry's
// own flags; then restore --from-trash brings T-1 back with its files.
func TestReclaimKeepTrashCrash(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	ttl := []string{envvar.ReservationTTL + "=2s"}
	before := crashCaptureDir(t, s.target.Path)
	crash := crashExec(t, bin, s.repo.Dir, append(ttl, "MAJLIS_FAILPOINTS=reclaim/removed=crash"),
		"workspace", "reclaim", "T-1", "--yes", "--keep-trash", "1h", "--request-id", "K", "--json")
	if !crash.killed {
		t.Fatalf("the reclaim was not killed\n%s", crash)
	}
	held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, held.ExpiresAt)
	retry := crashExec(t, bin, s.repo.Dir, ttl, "workspace", "reclaim", "T-1", "--yes", "--request-id", "K", "--json")
	if retry.exit != 0 {
		t.Fatalf("retry\n%s", retry)
	}
	var res struct {
		Reclaim ReclaimResult `json:"reclaim"`
	}
	retry.decode(t, &res)
	if res.Reclaim.TrashPath == "" || res.Reclaim.TrashKeptUntil == nil {
		t.Fatalf("the retry did not keep the trash: %+v", res.Reclaim)
	}
	if _, err := os.Lstat(filepath.Join(res.Reclaim.TrashPath, ".git")); err != nil {
		t.Fatalf("the kept trash is not there: %v", err)
	}
	restored := crashExec(t, bin, s.repo.Dir, nil, "workspace", "restore", "T-1", "--from-trash", "--json")
	if restored.exit != 0 {
		t.Fatalf("restore\n%s", restored)
	}
	if diff := cmp.Diff(before, crashCaptureDir(t, s.target.Path)); diff != "" {
		t.Errorf("T-1 restored differs (-before +after):\n%s", diff)
	}
	s.checkFsck(t, "after the restore")
}

// TestReclaimBindMount: a workspace that is a mount point (here bound onto
// itself, so its identity is the one allocated) cannot be moved by a
// rename, and is never copied: preview and reclaim refuse (cross_device)
// before any effect. Needs the right to mount; skipped otherwise.
func TestReclaimBindMount(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	peerDirty(t, target.Path)
	if out, err := exec.Command("mount", "--bind", target.Path, target.Path).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", target.Path).Run() })
	before := peerObserve(t, p, repo, target.Path)
	if _, err := p.PreviewReclaim(t.Context(), "T-1"); !errors.Is(err, ErrCrossDevice) {
		t.Errorf("preview of a mount point: %v, want ErrCrossDevice", err)
	}
	_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true})
	if !errors.Is(err, ErrCrossDevice) {
		t.Fatalf("reclaim of a mount point: %v, want ErrCrossDevice", err)
	}
	// Refused before any effect: not even a salvage ref.
	peerUnchanged(t, before, peerObserve(t, p, repo, target.Path))
	if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
		t.Errorf("trash left: %v", left)
	}
	peerNoLease(t, p)
}

// TestReclaimStopsAtMountInside: a file system mounted inside a workspace
// (a bind mount of someone's data into an ignored folder) is not deleted
// with it: the reclaim stops at the mount when it deletes the trash
// (cross_device), the mounted files are untouched, and once unmounted a
// retry finishes. Needs the right to mount; skipped otherwise.
func TestReclaimStopsAtMountInside(t *testing.T) {
	t.Parallel()
	_, p := peerProvider(t)
	target := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	data := filepath.Join(t.TempDir(), "data")
	mnt := filepath.Join(target.Path, "data")
	for _, d := range []string{data, mnt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "precious"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", data, mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v %s", err, out)
	}
	// Wherever the reclaim left it (at the path, or moved into the trash
	// folder with the workspace), the mount must not outlive the test.
	t.Cleanup(func() {
		moved, _ := filepath.Glob(filepath.Join(filepath.Dir(target.Path), trashPrefix+"*", "data"))
		for _, m := range append(moved, mnt) {
			exec.Command("umount", "-l", m).Run()
		}
	})
	_, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, RequestID: "R", DeleteTrash: true})
	if !errors.Is(err, ErrCrossDevice) {
		t.Fatalf("reclaim of a workspace with a mount inside: %v, want ErrCrossDevice", err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "precious")); err != nil || string(b) != "keep\n" {
		t.Fatalf("the mounted file system's file after the reclaim: %q, %v", b, err)
	}
	left := trashLeft(t, p, filepath.Dir(target.Path))
	if len(left) != 1 {
		t.Fatalf("trash folders left: %v, want the workspace in its trash", left)
	}
	mounted := filepath.Join(left[0], "data")
	if out, err := exec.Command("umount", mounted).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v %s", mounted, err, out)
	}
	if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: "T-1", Yes: true, RequestID: "R", DeleteTrash: true}); err != nil {
		t.Fatalf("retry after unmounting: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(data, "precious")); err != nil || string(b) != "keep\n" {
		t.Fatalf("the data after the retry: %q, %v", b, err)
	}
	if left := trashLeft(t, p, filepath.Dir(target.Path)); len(left) > 0 {
		t.Errorf("trash left after the retry: %v", left)
	}
}

// TestReclaimRetryFindsForeignTrash: a reclaim killed right after the move;
// before the retry, the trash folder's directory is replaced by another
// one. The retry deletes nothing: it refuses (identity_drift) naming both
// the path and the trash folder, and the directory there is untouched.
func TestReclaimRetryFindsForeignTrash(t *testing.T) {
	t.Parallel()
	bin := crashBinary(t)
	s := newCrashScene(t)
	ttl := []string{envvar.ReservationTTL + "=2s"}
	args := []string{"workspace", "reclaim", "T-1", "--yes", "--request-id", "F", "--json"}
	crash := crashExec(t, bin, s.repo.Dir, append(ttl, "MAJLIS_FAILPOINTS=reclaim/moved=crash"), args...)
	if !crash.killed {
		t.Fatalf("the reclaim was not killed\n%s", crash)
	}
	trash, _ := filepath.Glob(filepath.Join(filepath.Dir(s.target.Path), trashPrefix+"T-1.1.*"))
	if len(trash) != 1 {
		t.Fatalf("trash folders after the crash: %v", trash)
	}
	away := filepath.Join(fixtures.TempDir(t), "T-1-away")
	if err := os.Rename(trash[0], away); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(trash[0], "someone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(trash[0], "someone", "file.txt"), []byte("not T-1's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := crashCaptureFiles(t, trash[0])
	t1 := crashCaptureFiles(t, away)
	held, err := s.p.leases.Inspect(reclaimPrefix + "T-1")
	if err != nil {
		t.Fatal(err)
	}
	crashWaitExpired(t, held.ExpiresAt)
	retry := crashExec(t, bin, s.repo.Dir, ttl, args...)
	if retry.exit != 3 || retry.errorCode() != "identity_drift" {
		t.Fatalf("retry: want exit 3, identity_drift\n%s", retry)
	}
	var refusal struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	retry.decode(t, &refusal)
	if refusal.Error.Details["path"] != s.target.Path || refusal.Error.Details["trash_path"] != trash[0] {
		t.Errorf("the refusal does not name both places: %v", refusal.Error.Details)
	}
	if diff := cmp.Diff(before, crashCaptureFiles(t, trash[0])); diff != "" {
		t.Errorf("the directory in the trash folder changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(t1, crashCaptureFiles(t, away)); diff != "" {
		t.Errorf("T-1 changed (-before +after):\n%s", diff)
	}
	s.checkWorkPreserved(t)
}
