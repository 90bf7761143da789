package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
)

// The five ways a reclaim used to lose work (issue 11), each from the
// user's side: a state made with plain git, a reclaim, then what is still
// reachable from a ref of the repository.

// reclaimAll previews (which must not call the workspace clean) and
// reclaims binding, and checks that the directory is gone.
func reclaimAll(t *testing.T, p *Provider, binding, path string) (*Preview, *ReclaimResult) {
	t.Helper()
	pv, err := p.PreviewReclaim(t.Context(), binding)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Confirm: pv.Digest, SalvageSubmodules: true, DeleteTrash: true})
	if err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace not removed: %v", err)
	}
	return pv, res
}

func mustReach(t *testing.T, repo *fixtures.Repo, what, id string) {
	t.Helper()
	if !repo.Reachable(id) {
		t.Errorf("%s (%s) is reachable from no ref after the reclaim", what, id)
	}
}

func TestReclaimKeepsCommitsOnlyTheWorkspaceHolds(t *testing.T) {
	t.Parallel()
	for name, make := range map[string]func(ws *fixtures.Repo) string{
		"detached HEAD": func(ws *fixtures.Repo) string { return ws.DetachedCommit("d.txt", "detached\n") },
		"refs/worktree": func(ws *fixtures.Repo) string {
			return ws.WorktreeRefCommit("majlis/T-1", "refs/worktree/keep", "w.txt", "worktree ref\n")
		},
		"refs/bisect": func(ws *fixtures.Repo) string {
			return ws.WorktreeRefCommit("majlis/T-1", "refs/bisect/bad", "b.txt", "bisect\n")
		},
		"refs/rewritten": func(ws *fixtures.Repo) string {
			return ws.WorktreeRefCommit("majlis/T-1", "refs/rewritten/x", "r.txt", "rewritten\n")
		},
		"interrupted rebase": func(ws *fixtures.Repo) string { return ws.RebaseStoppedAtEdit("amended.txt", "amended\n") },
		"HEAD reflog":        func(ws *fixtures.Repo) string { return ws.ReflogOnlyCommit("majlis/T-1", "l.txt", "reflog\n") },
	} {
		t.Run(name, func(t *testing.T) {
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			commit := make(ws)
			pv, res := reclaimAll(t, p, "T-1", w.Path)
			if pv.Salvage.Clean || len(pv.Salvage.Pins) == 0 {
				t.Errorf("preview calls the workspace clean, pins %+v", pv.Salvage.Pins)
			}
			if res.SalvageRef == nil {
				t.Fatalf("no salvage ref")
			}
			mustReach(t, repo, "the commit only the workspace held", commit)
		})
	}
}

func TestReclaimKeepsThePartiallyStagedVersion(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	staged := ws.PartialStage("README.md", "v1 staged\n", "v2 in the worktree\n")
	_, res := reclaimAll(t, p, "T-1", w.Path)
	mustReach(t, repo, "the staged version", staged)
	if got := repo.Git("show", *res.SalvageRef+"^2:README.md"); got != "v1 staged\n" {
		t.Errorf("the index commit (parent 2) holds %q", got)
	}
	if got := repo.Git("show", *res.SalvageRef+":README.md"); got != "v2 in the worktree\n" {
		t.Errorf("the salvage tree holds %q", got)
	}
}

func TestReclaimKeepsHiddenEdits(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--assume-unchanged", "--skip-worktree"} {
		t.Run(flag, func(t *testing.T) {
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			blob := ws.HideEdit("README.md", flag, "hidden edit\n")
			pv, res := reclaimAll(t, p, "T-1", w.Path)
			if pv.Salvage.Clean {
				t.Errorf("preview calls a workspace with a hidden edit clean")
			}
			named := false
			for _, h := range pv.Salvage.Hidden {
				named = named || h.Path == "README.md" && h.Flag == strings.TrimPrefix(flag, "--")
			}
			if !named {
				t.Errorf("preview does not name the hidden file: %+v", pv.Salvage.Hidden)
			}
			mustReach(t, repo, "the hidden edit", blob)
			if got := repo.Git("show", *res.SalvageRef+":README.md"); got != "hidden edit\n" {
				t.Errorf("the salvage tree holds %q", got)
			}
		})
	}
}

// TestRestoreKeepsStatCleanHiddenEdit is the round trip's seed
// 1796072314843435718 made deterministic: a file committed, then flagged
// and edited keeping its size, mtime and inode (the round trip did it
// within one second; core.trustctime=false stands in for the ctime that
// a second's tick would change). Its stat data still matches the index
// entry, which git never refreshes while the flag is set; reclaim must
// still salvage the edit and restore must put it back, flag and all.
func TestRestoreKeepsStatCleanHiddenEdit(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--assume-unchanged", "--skip-worktree"} {
		t.Run(flag, func(t *testing.T) {
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			ws.Config("core.trustctime", "false")
			stamp := time.Now().Add(-time.Hour).Truncate(time.Second)
			ws.WriteFile("src/d.txt", "detached\n")
			if err := os.Chtimes(ws.Path("src/d.txt"), stamp, stamp); err != nil {
				t.Fatal(err)
			}
			ws.Commit("d")
			blob := ws.HideEdit("src/d.txt", flag, "hidden 5\n")
			if err := os.Chtimes(ws.Path("src/d.txt"), stamp, stamp); err != nil {
				t.Fatal(err)
			}
			index := ws.Git("ls-files", "-s", "-v", "--", "src/d.txt")
			_, rec := reclaimAll(t, p, "T-1", w.Path)
			if rec.SalvageRef == nil {
				t.Fatalf("no salvage ref")
			}
			mustReach(t, repo, "the hidden edit", blob)
			if got := repo.Git("show", *rec.SalvageRef+":src/d.txt"); got != "hidden 5\n" {
				t.Errorf("the salvage tree holds %q", got)
			}
			res, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
			if err != nil {
				t.Fatalf("restore: %v", err)
			}
			back := &fixtures.Repo{T: t, Dir: res.Workspace.Path}
			if b, err := os.ReadFile(back.Path("src/d.txt")); err != nil || string(b) != "hidden 5\n" {
				t.Errorf("restored src/d.txt = %q, %v; want %q", b, err, "hidden 5\n")
			}
			if got := back.Git("ls-files", "-s", "-v", "--", "src/d.txt"); got != index {
				t.Errorf("restored index entry %q, want %q", got, index)
			}
		})
	}
}

func TestReclaimKeepsSubmoduleTagsAndStashes(t *testing.T) {
	t.Parallel()
	repo, p, target := submoduleWorkspace(t)
	ws := &fixtures.Repo{T: t, Dir: target.Path}
	ws.Git("-c", "protocol.file.allow=always", "submodule", "--quiet", "update", "--init")
	sub := &fixtures.Repo{T: t, Dir: ws.Path("lib")}
	sub.Git("checkout", "--quiet", "-b", "work")
	tagged := sub.TagOnlyCommit("work", "v-local", "tagged.txt", "tagged only\n")
	stashes := sub.StashEdits("README.md", "stash one\n", "stash two\n", "stash three\n")
	reflogOnly := sub.ReflogOnlyCommit("work", "reflog.txt", "only in the submodule's HEAD reflog\n")
	reclaimAll(t, p, "T-1", target.Path)
	mustReach(t, repo, "the submodule commit only a tag held", tagged)
	mustReach(t, repo, "the submodule commit only its HEAD reflog held", reflogOnly)
	for i, s := range stashes {
		mustReach(t, repo, "submodule stash entry "+string(rune('0'+len(stashes)-1-i)), s)
	}
}

func TestReclaimSparseCheckout(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	blob := ws.SparseOutsideCone("cone", "elsewhere/new.txt", "outside the cone\n")
	_, res := reclaimAll(t, p, "T-1", w.Path)
	mustReach(t, repo, "the new file outside the sparse cone", blob)
	if got := repo.Git("show", *res.SalvageRef+":elsewhere/new.txt"); got != "outside the cone\n" {
		t.Errorf("the salvage tree holds %q", got)
	}
	// Files outside the cone that were never checked out are not deletions.
	if got := repo.Git("show", *res.SalvageRef+":other/tracked.txt"); got != "outside the cone\n" {
		t.Errorf("the salvage tree holds %q for a file outside the cone", got)
	}
}

// A restore interrupted after its claim, before its worktree: a retry
// with its request id marks the claim failed (nothing of the salvage is
// touched, no branch is deleted), and a new restore then succeeds.
func TestInterruptedRestore(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	detached := ws.DetachedCommit("d.txt", "detached\n")
	_, res := reclaimAll(t, p, "T-1", w.Path)
	salvage := repo.RevParse(*res.SalvageRef)
	branch := repo.RevParse("refs/heads/majlis/T-1")

	k := startChild(t, "restore-claim-and-die", "MAJLIS_REPO="+repo.Dir, "MAJLIS_BINDING=T-1", "MAJLIS_PATH="+w.Path,
		"MAJLIS_REQUEST=req-r", "MAJLIS_BASE="+detached, "MAJLIS_SALVAGE="+*res.SalvageRef)
	k.Wait()
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", RequestID: "req-r"}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("retry of the interrupted restore: %v, want ErrInterrupted", err)
	}
	if got := repo.RevParse("refs/heads/majlis/T-1"); got != branch {
		t.Errorf("branch moved from %s to %s", branch, got)
	}
	if got := repo.RevParse(*res.SalvageRef); got != salvage {
		t.Errorf("salvage ref moved from %s to %s", salvage, got)
	}
	again, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatalf("restore after the failed one: %v", err)
	}
	if again.Head != detached || again.Branch != nil {
		t.Errorf("restored %+v, want detached at %s", again, detached)
	}
}

// A conflict resolved with git add leaves its stages in the index's
// resolve-undo extension, so that `git checkout -m PATH` can recreate it.
// Stages made by `git apply --3way` (here, update-index --index-info) are
// blobs only the index holds: the salvage must keep them, and the restored
// workspace must recreate the conflict after a gc.
func TestReclaimKeepsResolveUndo(t *testing.T) {
	t.Parallel()
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) { reclaimKeepsResolveUndo(t, split) })
	}
}

func reclaimKeepsResolveUndo(t *testing.T, split bool) {
	repo, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	if split {
		ws.Git("update-index", "--split-index")
	}
	var ids []string
	for _, c := range []string{"base only in the index\n", "ours only in the index\n", "theirs only in the index\n"} {
		out, err := fixtures.GitStdin(t, ws.Dir, []byte(c), "hash-object", "-w", "--stdin")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	info := "0 " + strings.Repeat("0", 40) + "\tREADME.md\n"
	for i, id := range ids {
		info += "100644 " + id + " " + string(rune('1'+i)) + "\tREADME.md\n"
	}
	if _, err := fixtures.GitStdin(t, ws.Dir, []byte(info), "update-index", "--index-info"); err != nil {
		t.Fatal(err)
	}
	ws.WriteFile("README.md", "resolved\n")
	ws.Git("add", "README.md")

	reclaimAll(t, p, "T-1", w.Path)
	for i, id := range ids {
		mustReach(t, repo, "resolve-undo stage "+string(rune('1'+i)), id)
	}
	repo.Git("gc", "-q", "--prune=now")
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
		t.Fatal(err)
	}
	ws.Git("checkout", "-m", "README.md")
	want := "<<<<<<< ours\nours only in the index\n=======\ntheirs only in the index\n>>>>>>> theirs\n"
	if got := ws.ReadFile("README.md"); got != want {
		t.Errorf("git checkout -m after restore: README.md is %q, want the conflict %q", got, want)
	}
}

// A split index (core.splitIndex) without a sparse checkout restores
// whole, and the restore says nothing about a sparse cone.
func TestRestoreSplitIndexReportsNoSparseLoss(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.Git("update-index", "--split-index")
	ws.PartialStage("README.md", "v1 staged\n", "v2 in the worktree\n")
	before := ws.Git("status", "--porcelain=v2")
	reclaimAll(t, p, "T-1", w.Path)
	res, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotRestored) != 0 {
		t.Errorf("not_restored %q, want nothing", res.NotRestored)
	}
	if after := ws.Git("status", "--porcelain=v2"); after != before {
		t.Errorf("status after restore:\n%s\nwant:\n%s", after, before)
	}
}

// Per-worktree config and sparse patterns live in the workspace's admin
// entry, which the removal deletes: a workspace holding nothing else is
// not clean, and a restore brings them back.
func TestReclaimKeepsWorktreeConfigAlone(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(ws *fixtures.Repo){
		"config.worktree": func(ws *fixtures.Repo) {
			ws.Git("config", "extensions.worktreeConfig", "true")
			ws.Git("config", "--worktree", "user.email", "only-here@example.invalid")
		},
		"sparse patterns": func(ws *fixtures.Repo) { ws.Git("sparse-checkout", "set", "src") },
	} {
		t.Run(name, func(t *testing.T) {
			_, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			set(ws)
			want := ws.Git("config", "--worktree", "--list")
			pv, res := reclaimAll(t, p, "T-1", w.Path)
			if pv.Salvage.Clean || res.SalvageRef == nil {
				t.Fatalf("the workspace was called clean (salvage ref %v): its per-worktree config is deleted unsalvaged", res.SalvageRef)
			}
			if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
				t.Fatal(err)
			}
			if got := ws.Git("config", "--worktree", "--list"); got != want {
				t.Errorf("per-worktree config after restore:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A restore writes back only inert per-worktree settings: a salvage ref
// may come from anywhere, and settings such as core.hooksPath or
// core.fsmonitor would run programs in the restored workspace. The others
// are reported, and stay in the salvage.
func TestRestoreDropsSettingsThatRunPrograms(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.Git("config", "extensions.worktreeConfig", "true")
	ws.Git("config", "--worktree", "user.email", "only-here@example.invalid")
	ws.Git("config", "--worktree", "core.hooksPath", filepath.Join(t.TempDir(), "hooks"))
	reclaimAll(t, p, "T-1", w.Path)
	res, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ws.Git("config", "--worktree", "--list"); got != "user.email=only-here@example.invalid\n" {
		t.Errorf("per-worktree config after restore:\n%s\nwant only user.email", got)
	}
	if !strings.Contains(strings.ToLower(strings.Join(res.NotRestored, "\n")), "core.hookspath") {
		t.Errorf("the dropped core.hooksPath is not reported: %q", res.NotRestored)
	}
}

// A salvage ref under one binding whose commit says it is another
// binding's (a ref copied or moved by hand) is refused: restoring it would
// give the workspace the other binding's files and branch.
func TestRestoreRefusesAnotherBindingsSalvage(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	for _, b := range []string{"T-1", "T-9"} {
		w := mustAllocate(t, p, AllocateOptions{Binding: b})
		ws := &fixtures.Repo{T: t, Dir: w.Path}
		ws.WriteFile(b+".txt", b+"\n")
		reclaimAll(t, p, b, w.Path)
	}
	repo.Git("update-ref", "refs/majlis/salvage/T-1/5", "refs/majlis/salvage/T-9/1")
	_, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", Salvage: 5})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("restore of T-9's salvage as T-1: %v, want %v", err, ErrMalformed)
	}
	if out := repo.Git("worktree", "list", "--porcelain"); strings.Contains(out, "T-1") {
		t.Errorf("a workspace was made:\n%s", out)
	}
	// T-1's own salvage still restores.
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1", Salvage: 1}); err != nil {
		t.Fatal(err)
	}
}

// Salvage stores a file through git add, which applies the file's
// attributes (text, eol, core.autocrlf, filters); restore writes it back
// through checkout, which applies them the other way. Neither is the
// identity: an untracked file under `*.dat text` loses its CR bytes, a
// CRLF text file under text=auto comes back LF. What a reclaim deletes
// must come back byte for byte.
func TestRestoreKeepsUntrackedFileBytesUnderTextAttributes(t *testing.T) {
	t.Parallel()
	_, p := newProvider(t)
	w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	ws := &fixtures.Repo{T: t, Dir: w.Path}
	ws.WriteFile(".gitattributes", "* text=auto\n*.dat text\n")
	ws.Git("add", ".gitattributes")
	ws.Commit("attributes")
	files := map[string]string{
		"img.dat":  "\x89PNG\r\n\x1a\n\x00\x01\r\n",
		"crlf.txt": "crlf\r\nfile\r\n",
	}
	ws.WriteFiles(files)
	reclaimAll(t, p, "T-1", w.Path)
	if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if got := ws.ReadFile(name); got != want {
			t.Errorf("%s after restore is %q, want %q", name, got, want)
		}
	}
}

// TestRestoreKeepsFileBytesUnderConversions: each way git converts a
// file between the worktree and the object store, on a file reclaim
// deletes, then restores. Every file comes back byte for byte, the index
// as git had staged it, and the salvage tree still shows what git stores.
func TestRestoreKeepsFileBytesUnderConversions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup is run in the workspace and commits what it needs; files
		// are then written on disk, and stage is staged before them.
		setup func(ws *fixtures.Repo)
		stage map[string]string
		files map[string]string
		// stored are the salvage tree's contents, where git converts.
		stored map[string]string
	}{{
		name:   "tracked CRLF text file modified, another staged",
		setup:  attributes("*.txt text\n", map[string]string{"a.txt": "one\n", "s.txt": "s0\n"}),
		stage:  map[string]string{"s.txt": "staged\r\n"},
		files:  map[string]string{"a.txt": "one\r\ntwo\r\n", "s.txt": "worktree\r\n"},
		stored: map[string]string{"a.txt": "one\ntwo\n", "s.txt": "worktree\n"},
	}, {
		// git status calls it clean: the file was committed with CRLF,
		// which git stored as LF. The preview calls the workspace clean;
		// the salvage made once it is moved aside keeps the bytes.
		name:  "committed CRLF file, unchanged",
		setup: attributes("*.txt text\n", map[string]string{"c.txt": "crlf\r\n"}),
		files: map[string]string{"c.txt": "crlf\r\n"},
	}, {
		name:   "untracked CRLF under text=auto",
		setup:  attributes("* text=auto\n", nil),
		files:  map[string]string{"crlf.txt": "crlf\r\nfile\r\n", "lf.txt": "lf\n"},
		stored: map[string]string{"crlf.txt": "crlf\nfile\n"},
	}, {
		name:  "binary marked text",
		setup: attributes("*.bin text\n", map[string]string{"old.bin": "\x00\x01\n"}),
		files: map[string]string{"img.bin": "\x89PNG\r\n\x1a\n\x00\x01\r\n", "old.bin": "\x00\r\n\x02\r"},
	}, {
		name: "core.autocrlf=true",
		setup: func(ws *fixtures.Repo) {
			ws.WriteFile("t.txt", "lf\n")
			ws.Commit("t")
			ws.Config("core.autocrlf", "true")
		},
		files: map[string]string{"t.txt": "mixed\nends\r\n", "new.txt": "lf only\n", "crlf.txt": "crlf\r\n"},
	}, {
		name: "core.autocrlf=true with core.safecrlf=true",
		setup: func(ws *fixtures.Repo) {
			ws.Config("core.autocrlf", "true")
			ws.Config("core.safecrlf", "true")
		},
		files: map[string]string{"mixed.txt": "mixed\nends\r\n"},
	}, {
		name:   "core.autocrlf=input",
		setup:  func(ws *fixtures.Repo) { ws.Config("core.autocrlf", "input") },
		files:  map[string]string{"in.txt": "crlf\r\n", "lf.txt": "lf\n"},
		stored: map[string]string{"in.txt": "crlf\n"},
	}, {
		name:   "ident",
		setup:  attributes("*.c ident\n", map[string]string{"old.c": "/* $Id$ */\n"}),
		files:  map[string]string{"new.c": "/* $Id$ */\n", "old.c": "/* $Id: by hand $ */\nint x;\n"},
		stored: map[string]string{"old.c": "/* $Id$ */\nint x;\n"},
	}, {
		name: "clean and smudge filter configured in the repository",
		setup: func(ws *fixtures.Repo) {
			ws.Config("filter.redact.clean", "sed s/secret/REDACTED/")
			ws.Config("filter.redact.smudge", "cat")
			attributes("*.env filter=redact\n", nil)(ws)
		},
		files:  map[string]string{"a.env": "token=secret\n"},
		stored: map[string]string{"a.env": "token=REDACTED\n"},
	}, {
		name:  "working-tree-encoding=UTF-16",
		setup: attributes("*.u16 text working-tree-encoding=UTF-16\n", nil),
		// little-endian with its byte order mark; git checks UTF-16 out
		// big-endian
		files:  map[string]string{"w.u16": "\xff\xfeh\x00i\x00\r\x00\n\x00"},
		stored: map[string]string{"w.u16": "hi\n"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			repo, p := newProvider(t)
			w := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
			ws := &fixtures.Repo{T: t, Dir: w.Path}
			tc.setup(ws)
			if len(tc.stage) > 0 {
				ws.WriteFiles(tc.stage)
				for name := range tc.stage {
					ws.Git("-c", "core.safecrlf=false", "add", "--", name)
				}
			}
			ws.WriteFiles(tc.files)
			staged := ws.Git("ls-files", "-s")
			_, rec := reclaimAll(t, p, "T-1", w.Path)
			if len(rec.SalvageRefs) == 0 {
				t.Fatalf("no salvage ref")
			}
			ref := rec.SalvageRefs[len(rec.SalvageRefs)-1]
			for name, want := range tc.stored {
				if got := repo.Git("show", ref+":"+name); got != want {
					t.Errorf("the salvage tree holds %s as %q, want %q", name, got, want)
				}
			}
			if _, err := p.Restore(t.Context(), RestoreOptions{Binding: "T-1"}); err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.files {
				if got := ws.ReadFile(name); got != want {
					t.Errorf("%s after restore is %q, want %q", name, got, want)
				}
			}
			if got := ws.Git("ls-files", "-s"); got != staged {
				t.Errorf("index after restore:\n%s\nwant\n%s", got, staged)
			}
		})
	}
}

// attributes returns a setup that commits .gitattributes holding attrs,
// and files, in the workspace.
func attributes(attrs string, files map[string]string) func(ws *fixtures.Repo) {
	return func(ws *fixtures.Repo) {
		ws.WriteFile(".gitattributes", attrs)
		ws.WriteFiles(files)
		ws.Commit("attributes")
	}
}
