package gitops

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// With core.worktree (or core.bare) in a worktree's own config, git run
// there without being told otherwise acts on another directory (or none).
// Every function that acts on a worktree names its git dir and work tree,
// so each still acts on the worktree it was given, and never on the main
// worktree that core.worktree names (salvage's
// TestSnapshotIgnoresWorktreeConfig checks Snapshot likewise).
func TestWorktreeFunctionsIgnoreWorktreeConfig(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"core.worktree", "core.bare"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			main, ws := fixtures.WorktreeAimedElsewhere(t, key)
			mainBefore := fixtures.Files(t, main.Dir)
			mainStatus := main.StatusBytes()

			st, err := ReadStatus(ctx, ws.Dir, StatusOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range st.Entries {
				got = append(got, e.Kind.String()+" "+e.Path)
			}
			if diff := cmp.Diff([]string{"ordinary tracked.txt", "untracked ws-untracked.txt"}, got); diff != "" {
				t.Errorf("status of ws (-want +got):\n%s", diff)
			}
			if subs, err := Submodules(ctx, ws.Dir); err != nil || len(subs) != 0 {
				t.Errorf("Submodules = %v, %v", subs, err)
			}
			if ignored, err := CheckIgnore(ctx, ws.Dir, "ws-untracked.txt"); err != nil || ignored {
				t.Errorf("CheckIgnore = %v, %v", ignored, err)
			}
			r, err := OpenReader(ctx, ws.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if head, err := r.WorktreeHead(ctx, ws.Dir); err != nil || head != ws.Head() {
				t.Errorf("WorktreeHead = %q, %v", head, err)
			}
			// The writers a kept trash uses: HEAD detached in ws and put
			// back, never in the main worktree.
			h, err := ReadHead(ctx, ws.Dir)
			if err != nil || h.Branch == "" || h.Commit != ws.Head() {
				t.Fatalf("ReadHead = %+v, %v", h, err)
			}
			mainHead := fixtures.Git(t, main.Dir, "symbolic-ref", "HEAD")
			if err := DetachHead(ctx, ws.Dir, h.Branch, h.Commit); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadHead(ctx, ws.Dir); err != nil || got.Branch != "" || got.Commit != h.Commit {
				t.Errorf("after DetachHead, ws's HEAD = %+v, %v", got, err)
			}
			if got := fixtures.Git(t, main.Dir, "symbolic-ref", "HEAD"); got != mainHead {
				t.Errorf("DetachHead of ws moved the main worktree's HEAD: %q, was %q", got, mainHead)
			}
			if err := AttachHead(ctx, ws.Dir, h.Branch); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadHead(ctx, ws.Dir); err != nil || got != h {
				t.Errorf("after AttachHead, ws's HEAD = %+v, %v; want %+v", got, err, h)
			}
			if diff := cmp.Diff(mainBefore, fixtures.Files(t, main.Dir)); diff != "" {
				t.Errorf("the main worktree changed (-before +after):\n%s", diff)
			}
			if got := main.StatusBytes(); got != mainStatus {
				t.Errorf("the main worktree's status changed: %q, was %q", got, mainStatus)
			}
		})
	}
}

func TestCheckWorkTree(t *testing.T) {
	t.Parallel()
	t.Run("a plain worktree, also through a symlink", func(t *testing.T) {
		t.Parallel()
		main, ws := fixtures.WorktreePair(t)
		link := filepath.Join(fixtures.TempDir(t), "link")
		if err := os.Symlink(ws.Dir, link); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{ws.Dir, link, main.Dir} {
			if err := CheckWorkTree(ctx, dir); err != nil {
				t.Errorf("CheckWorkTree(%s) = %v", dir, err)
			}
		}
	})
	t.Run("core.worktree naming the worktree itself", func(t *testing.T) {
		t.Parallel()
		_, ws := fixtures.WorktreePair(t)
		ws.SetWorktreeConfig("core.worktree", ws.Dir)
		if err := CheckWorkTree(ctx, ws.Dir); err != nil {
			t.Errorf("CheckWorkTree = %v", err)
		}
	})
	t.Run("core.bare false", func(t *testing.T) {
		t.Parallel()
		_, ws := fixtures.WorktreePair(t)
		ws.SetWorktreeConfig("core.bare", "false")
		if err := CheckWorkTree(ctx, ws.Dir); err != nil {
			t.Errorf("CheckWorkTree = %v", err)
		}
	})
	t.Run("core.worktree naming the main worktree", func(t *testing.T) {
		t.Parallel()
		main, ws := fixtures.WorktreePair(t)
		ws.SetWorktreeConfig("core.worktree", main.Dir)
		m := checkMismatch(t, ws.Dir)
		if m.GitTopLevel != main.Dir || m.Bare {
			t.Errorf("mismatch %+v, want git's top level %s", m, main.Dir)
		}
		wantSetting(t, m, "core.worktree", main.Dir, "worktree", "config.worktree")
		if !strings.Contains(m.Error(), main.Dir) || !strings.Contains(m.Error(), "core.worktree") {
			t.Errorf("message does not name the setting and the directory: %v", m)
		}
	})
	t.Run("core.bare true", func(t *testing.T) {
		t.Parallel()
		_, ws := fixtures.WorktreePair(t)
		ws.SetWorktreeConfig("core.bare", "true")
		m := checkMismatch(t, ws.Dir)
		if !m.Bare {
			t.Errorf("mismatch %+v, want bare", m)
		}
		wantSetting(t, m, "core.bare", "true", "worktree", "config.worktree")
	})
	t.Run("not a top level", func(t *testing.T) {
		t.Parallel()
		_, ws := fixtures.WorktreePair(t)
		ws.Mkdir("sub")
		if err := CheckWorkTree(ctx, ws.Path("sub")); !errorsIs(err, ErrNotTopLevel) {
			t.Errorf("CheckWorkTree(sub) = %v, want ErrNotTopLevel", err)
		}
	})
}

func checkMismatch(t *testing.T, dir string) *WorkTreeMismatch {
	t.Helper()
	err := CheckWorkTree(ctx, dir)
	var m *WorkTreeMismatch
	if !errorsIs(err, ErrWorkTreeMismatch) || !errorsAs(err, &m) {
		t.Fatalf("CheckWorkTree = %v, want a *WorkTreeMismatch", err)
	}
	return m
}

func wantSetting(t *testing.T, m *WorkTreeMismatch, key, value, scope, file string) {
	t.Helper()
	for _, s := range m.Settings {
		if s.Key == key && s.Value == value && s.Scope == scope && strings.HasSuffix(s.Origin, file) {
			return
		}
	}
	t.Errorf("settings %+v do not name %s = %s (%s, %s)", m.Settings, key, value, scope, file)
}

func TestUnlockWorktreeIf(t *testing.T) {
	t.Parallel()
	const mine = "majlis workspace T-1 (claim 0123456789ab)"
	for _, tc := range []struct {
		name   string
		reason string // "-" for no lock
		lifted bool
	}{
		{"its own lock", mine, true},
		{"not locked", "-", true},
		{"someone else's lock", "user: keep this", false},
		{"a lock without a reason", "", false},
		{"a lock whose reason only starts like its own", mine + " and more", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			main := fixtures.NewRepo(t)
			ws := main.NewWorktree("ws")
			admin := fixtures.AdminDir(t, ws.Dir)
			if tc.reason != "-" {
				main.LockWorktree(ws.Dir, tc.reason)
			}
			before, _ := os.ReadFile(filepath.Join(admin, "locked"))
			err := UnlockWorktreeIf(admin, mine)
			lock, rerr := ReadWorktreeLock(admin)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.lifted {
				if err != nil || lock.Locked {
					t.Errorf("UnlockWorktreeIf = %v, lock now %+v; want it lifted", err, lock)
				}
				return
			}
			var le *LockedError
			if !errorsIs(err, ErrWorktreeLocked) || !errorsAs(err, &le) || le.Reason != tc.reason {
				t.Errorf("UnlockWorktreeIf = %v, want a *LockedError with reason %q", err, tc.reason)
			}
			after, _ := os.ReadFile(filepath.Join(admin, "locked"))
			if !lock.Locked || lock.Reason != tc.reason || string(after) != string(before) {
				t.Errorf("lock now %+v (%q), want it kept as %q", lock, after, before)
			}
			if left, _ := filepath.Glob(filepath.Join(admin, "locked.*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestWriteEntryPin(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	ws := main.NewWorktree("ws")
	admin := fixtures.AdminDir(t, ws.Dir)
	if _, err := ReadEntryPin(admin); !errorsIs(err, fs.ErrNotExist) {
		t.Fatalf("ReadEntryPin of an unpinned entry = %v", err)
	}
	if err := WriteEntryPin(admin, "sha256:1"); err != nil {
		t.Fatal(err)
	}
	if err := WriteEntryPin(admin, "sha256:1"); err != nil {
		t.Errorf("pinning again with the same token: %v", err)
	}
	if err := WriteEntryPin(admin, "sha256:2"); !errorsIs(err, ErrPinMismatch) {
		t.Errorf("pinning with another token = %v, want ErrPinMismatch", err)
	}
	if got, err := ReadEntryPin(admin); err != nil || got != "sha256:1" {
		t.Errorf("ReadEntryPin = %q, %v", got, err)
	}
	if left, _ := filepath.Glob(filepath.Join(admin, pinFile+".tmp-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	// git still treats the entry as its own.
	if out := ws.Git("status", "--porcelain"); out != "" {
		t.Errorf("status = %q", out)
	}
	// A worktree that git makes again at the same place has no pin.
	again := main.ReAddWorktree(ws.Dir, true)
	if fixtures.AdminDir(t, again.Dir) != admin {
		t.Fatalf("the new entry has another name")
	}
	if _, err := ReadEntryPin(admin); !errorsIs(err, fs.ErrNotExist) {
		t.Errorf("ReadEntryPin of the re-added entry = %v, want none", err)
	}
}

func TestWorktreeEntries(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	ws := main.NewWorktree("ws")
	other := main.NewWorktree("other")
	admin := fixtures.AdminDir(t, ws.Dir)
	common := main.CommonDir()
	if err := os.RemoveAll(ws.Dir); err != nil { // the directory gone, the entry kept
		t.Fatal(err)
	}
	for _, tc := range []struct {
		paths []string
		want  []string
	}{
		{[]string{ws.Dir}, []string{admin}},
		{[]string{ws.Dir + "/", "/elsewhere"}, []string{admin}},
		{[]string{other.Dir}, []string{fixtures.AdminDir(t, other.Dir)}},
		{[]string{main.Dir}, nil},
		{[]string{filepath.Dir(ws.Dir)}, nil},
	} {
		got, err := WorktreeEntries(common, tc.paths...)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("WorktreeEntries(%q) (-want +got):\n%s", tc.paths, diff)
		}
	}
	if got, err := WorktreeEntries(fixtures.NewRepo(t).CommonDir(), ws.Dir); err != nil || got != nil {
		t.Errorf("a repository without linked worktrees: %v, %v", got, err)
	}
}

func TestAdminEntries(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	locked := main.NewWorktree("locked")
	plain := main.NewWorktree("plain")
	main.Git("worktree", "lock", "--reason", "majlis workspace X (claim 0123456789ab)", locked.Dir)
	lockedAdmin, plainAdmin := fixtures.AdminDir(t, locked.Dir), fixtures.AdminDir(t, plain.Dir)
	if err := WriteEntryPin(lockedAdmin, "sha256:0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plainAdmin, pinFile), []byte("two\nlines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := AdminEntries(main.CommonDir())
	if err != nil {
		t.Fatal(err)
	}
	byDir := map[string]AdminEntry{}
	for _, e := range got {
		byDir[e.Dir] = e
	}
	if len(got) != 2 {
		t.Fatalf("entries %+v, want 2", got)
	}
	l := byDir[lockedAdmin]
	if l.Path != locked.Dir || !l.Lock.Locked || l.Lock.Reason != "majlis workspace X (claim 0123456789ab)" ||
		l.Pin != "sha256:0123456789abcdef" || l.PinErr != nil {
		t.Errorf("locked entry %+v", l)
	}
	p := byDir[plainAdmin]
	if p.Path != plain.Dir || p.Lock.Locked || p.Pin != "" || p.PinErr == nil {
		t.Errorf("plain entry %+v, want its path, no lock, an unreadable pin", p)
	}
	if got, err := AdminEntries(fixtures.NewRepo(t).CommonDir()); err != nil || got != nil {
		t.Errorf("a repository without linked worktrees: %v, %v", got, err)
	}
}
