package salvage

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// blobID is the SHA-1 object id of a blob with content.
func blobID(content string) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00%s", len(content), content)
	return hex.EncodeToString(h.Sum(nil))
}

// entry renders a tree entry as ls-tree does, without the path.
func entry(mode, content string) string {
	typ := "blob"
	if mode == "160000" {
		typ = "commit"
	}
	return mode + " " + typ + " " + blobID(content)
}

// dirty changes a worktree in every way a salvage must capture or skip,
// and returns the tree the snapshot must have (path -> ls-tree entry) and
// the counts it must report.
func dirty(r *fixtures.Repo) (map[string]string, gitops.Counts) {
	r.T.Helper()
	want := r.LsTree("HEAD")
	set := func(path, mode, content string) { want[path] = entry(mode, content) }

	r.WriteFile("modified.txt", "modified in the worktree\n")
	set("modified.txt", "100644", "modified in the worktree\n")
	r.WriteFile("staged.txt", "staged change\n")
	r.Git("add", "staged.txt")
	set("staged.txt", "100644", "staged change\n")
	r.WriteFile("both.txt", "staged\n")
	r.Git("add", "both.txt")
	r.WriteFile("both.txt", "staged, then changed again\n")
	set("both.txt", "100644", "staged, then changed again\n")
	r.Remove("deleted.txt")
	delete(want, "deleted.txt")
	r.Git("rm", "--quiet", "removed.txt")
	delete(want, "removed.txt")
	r.Chmod("chmod.txt", 0o755)
	set("chmod.txt", "100755", "chmod\n")
	r.Symlink("README.md", "typechange.txt")
	set("typechange.txt", "120000", "README.md")
	r.Symlink("somewhere/else", "link")
	set("link", "120000", "somewhere/else")
	r.WriteFile("tracked.log", "tracked files stay tracked, ignore rules or not\n")
	set("tracked.log", "100644", "tracked files stay tracked, ignore rules or not\n")
	r.WriteFile("staged-new.txt", "new and staged\n")
	r.Git("add", "staged-new.txt")
	set("staged-new.txt", "100644", "new and staged\n")
	r.WriteFile("untracked/deep/new.txt", "untracked\n")
	set("untracked/deep/new.txt", "100644", "untracked\n")
	r.WriteExecutable("untracked/run.sh", "#!/bin/sh\n")
	set("untracked/run.sh", "100755", "#!/bin/sh\n")
	r.Symlink("../nowhere", "untracked/dangling")
	set("untracked/dangling", "120000", "../nowhere")
	for i, name := range fixtures.OddNames() {
		content := fmt.Sprintf("odd %d\n", i)
		r.WriteFile("odd/"+name, content)
		set("odd/"+name, "100644", content)
	}
	// Ignored three ways: not captured.
	r.WriteFile("build/out.o", "ignored by .gitignore\n")
	r.WriteFile("debug.log", "ignored by .gitignore\n")
	r.WriteFile("secret.txt", "ignored by info/exclude\n")
	r.WriteFile("notes.excl", "ignored by core.excludesFile\n")

	counts := gitops.Counts{
		Modified:    6, // modified, staged, both, chmod, link, tracked.log
		Added:       4 + len(fixtures.OddNames()),
		Deleted:     2,
		TypeChanged: 1,
	}
	return want, counts
}

// base builds a repository with the committed files that dirty changes.
func base(t *testing.T) *fixtures.Repo {
	r := fixtures.NewRepo(t)
	for _, f := range []string{"modified", "staged", "both", "deleted", "removed", "chmod", "typechange"} {
		r.WriteFile(f+".txt", f+"\n")
	}
	r.Symlink("README.md", "link")
	r.WriteFile("tracked.log", "tracked\n")
	r.Git("add", "tracked.log")
	r.WriteGitignore("build/", "*.log")
	r.WriteInfoExclude("secret.txt")
	r.SetExcludesFile("*.excl")
	r.Commit("base")
	return r
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		worktree func(t *testing.T, main *fixtures.Repo) *fixtures.Repo
	}{
		{"main worktree", func(t *testing.T, main *fixtures.Repo) *fixtures.Repo { return main }},
		{"linked worktree", func(t *testing.T, main *fixtures.Repo) *fixtures.Repo {
			w := main.NewWorktree("T-14")
			// HEAD is per worktree: give this one its own.
			w.WriteFile("only-in-T-14.txt", "committed in the linked worktree\n")
			w.Commit("linked worktree commit")
			return w
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			main := base(t)
			r := tt.worktree(t, main)
			wantTree, wantCounts := dirty(r)
			head := r.Head()
			branch := r.Git("symbolic-ref", "HEAD")
			refs := r.Git("for-each-ref")
			index, status, before := r.IndexBytes(), r.StatusBytes(), fixtures.Files(t, r.Dir)

			res, err := Snapshot(ctx, r.Dir, "majlis salvage of T-14")
			if err != nil {
				t.Fatal(err)
			}

			// Nothing the user sees changed.
			fixtures.SameBytes(t, "index", index, r.IndexBytes())
			fixtures.SameBytes(t, "git status output", []byte(status), []byte(r.StatusBytes()))
			if diff := cmp.Diff(before, fixtures.Files(t, r.Dir)); diff != "" {
				t.Errorf("worktree files changed (-before +after):\n%s", diff)
			}
			if got := r.Head(); got != head {
				t.Errorf("HEAD moved from %s to %s", head, got)
			}
			if got := r.Git("symbolic-ref", "HEAD"); got != branch {
				t.Errorf("HEAD now on %q, was %q", got, branch)
			}
			if got := r.Git("for-each-ref"); got != refs {
				t.Errorf("refs changed:\nbefore %s\nafter %s", refs, got)
			}
			noTempIndex(t, r)

			// The commit holds the worktree's state on top of HEAD.
			if res.Clean || res.Parent != head || !gitops.IsObjectID(res.Commit) {
				t.Fatalf("result %+v: want a commit on %s", res, head)
			}
			if got := r.RevParse(res.Commit + "^{tree}"); got != res.Tree {
				t.Errorf("commit tree %s, result says %s", got, res.Tree)
			}
			want := res.Commit + " " + strings.Join(res.Layout.Parents(), " ") + "\n"
			if got := r.Git("rev-list", "--parents", "-n1", res.Commit); got != want || res.Layout.Parents()[0] != head {
				t.Errorf("commit parents: %q, want %q (HEAD, index, untracked stand-in, meta)", got, want)
			}
			if got := r.Git("log", "-1", "--format=%B", res.Commit); !strings.HasPrefix(got, "majlis salvage of T-14\n\nMajlis-Salvage: 2\n") {
				t.Errorf("commit message %q", got)
			}
			if diff := cmp.Diff(wantTree, r.LsTree(res.Commit)); diff != "" {
				t.Errorf("snapshot tree mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCounts, res.Files); diff != "" {
				t.Errorf("file counts mismatch (-want +got):\n%s", diff)
			}
			if res.DirtySubmodules != nil || res.NestedRepositories != nil {
				t.Errorf("submodules %q, nested repositories %q: want none", res.DirtySubmodules, res.NestedRepositories)
			}

			// The caller stores it, create-only.
			ref := "refs/majlis/salvage/T-14/1"
			if err := gitops.UpdateRefCreate(ctx, r.Dir, ref, res.Commit); err != nil {
				t.Fatal(err)
			}
			if got := main.RevParse(ref); got != res.Commit {
				t.Errorf("%s = %s, want %s", ref, got, res.Commit)
			}
			if err := gitops.UpdateRefCreate(ctx, r.Dir, ref, head); !errors.Is(err, gitops.ErrRefExists) || !errors.As(err, new(*gitops.Error)) {
				t.Fatalf("UpdateRefCreate of an existing ref = %v (%T), want a *gitops.Error wrapping ErrRefExists", err, err)
			}
			if got := main.RevParse(ref); got != res.Commit {
				t.Errorf("refused update moved %s to %s", ref, got)
			}
			fixtures.SameBytes(t, "index", index, r.IndexBytes())
		})
	}
}

// noTempIndex fails the test if a snapshot's temporary index was left in
// the worktree's git directory.
func noTempIndex(t *testing.T, r *fixtures.Repo) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(r.GitDir(), "majlis-snapshot-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("temporary index left behind: %q", left)
	}
}

func TestSnapshotClean(t *testing.T) {
	t.Parallel()
	r := base(t)
	r.WriteFile("build/out.o", "ignored\n")
	r.WriteFile("secret.txt", "ignored\n")
	index := r.IndexBytes()

	res, err := Snapshot(ctx, r.Dir, "nothing to save")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean || res.Commit != "" || res.Tree != r.RevParse("HEAD^{tree}") || res.Parent != r.Head() {
		t.Errorf("Snapshot of a clean worktree: %+v", res)
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())
	noTempIndex(t, r)

	// Staged, then changed back: the index differs from HEAD, the
	// worktree does not. The staged version is kept, in the index commit.
	r.WriteFile("staged.txt", "intermediate\n")
	r.Git("add", "staged.txt")
	r.WriteFile("staged.txt", "staged\n")
	index = r.IndexBytes()
	res, err = Snapshot(ctx, r.Dir, "the index differs")
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean || res.Tree != r.RevParse("HEAD^{tree}") {
		t.Fatalf("Snapshot with a staged version only: %+v", res)
	}
	if got := r.Git("show", res.Commit+"^2:staged.txt"); got != "intermediate\n" {
		t.Errorf("index commit holds %q", got)
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())
	noTempIndex(t, r)
}

func TestSnapshotUnborn(t *testing.T) {
	t.Parallel()
	r := fixtures.InitRepo(t, fixtures.TempDir(t))
	res, err := Snapshot(ctx, r.Dir, "empty")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean || res.Parent != "" || res.Commit != "" || res.Tree != emptyTree(40) {
		t.Errorf("Snapshot of an empty unborn repository: %+v", res)
	}

	r.WriteFile("first.txt", "first\n")
	r.WriteFile("staged.txt", "staged\n")
	r.Git("add", "staged.txt")
	index, status := r.IndexBytes(), r.StatusBytes()
	res, err = Snapshot(ctx, r.Dir, "first salvage")
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean || res.Parent != "" || res.Files != (gitops.Counts{Added: 2}) {
		t.Fatalf("Snapshot on an unborn branch: %+v", res)
	}
	if got := r.Git("rev-list", "--parents", "-n1", res.Commit); got != res.Commit+" "+strings.Join(res.Layout.Parents(), " ")+"\n" ||
		len(res.Layout.Parents()) != 2 {
		t.Errorf("snapshot on an unborn branch has parents: %q, want the index commit and the untracked stand-in", got)
	}
	want := map[string]string{"first.txt": entry("100644", "first\n"), "staged.txt": entry("100644", "staged\n")}
	if diff := cmp.Diff(want, r.LsTree(res.Commit)); diff != "" {
		t.Errorf("snapshot tree mismatch (-want +got):\n%s", diff)
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())
	fixtures.SameBytes(t, "git status output", []byte(status), []byte(r.StatusBytes()))
	if _, err := r.TryGit("rev-parse", "--verify", "-q", "HEAD"); err == nil {
		t.Errorf("HEAD was born")
	}
}

// TestSnapshotRacilyCleanEntry checks the temporary index keeps the
// index's modification time. A file changed in the same second as the
// index was written, keeping its size and mtime, looks unchanged by its
// stat data; git re-reads such "racily clean" entries only because their
// mtime is not older than the index file. A copy with a fresh mtime would
// hide the change.
func TestSnapshotRacilyCleanEntry(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.Config("core.trustctime", "false") // the rewrite below changes ctime
	stamp := time.Now().Add(-time.Hour).Truncate(time.Second)
	r.WriteFile("racy.txt", "before\n")
	if err := os.Chtimes(r.Path("racy.txt"), stamp, stamp); err != nil {
		t.Fatal(err)
	}
	r.Commit("racy")
	// Same size, same mtime, same inode: only the content differs.
	if err := os.WriteFile(r.Path("racy.txt"), []byte("after!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(r.Path("racy.txt"), stamp, stamp); err != nil {
		t.Fatal(err)
	}
	indexFile := filepath.Join(r.GitDir(), "index")
	if err := os.Chtimes(indexFile, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	res, err := Snapshot(ctx, r.Dir, "racy")
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean {
		t.Fatalf("Snapshot missed a change to a racily clean file")
	}
	if got := r.Blob(res.Commit, "racy.txt"); got != "after!\n" {
		t.Errorf("racy.txt in snapshot = %q, want %q", got, "after!\n")
	}
}

func TestSnapshotSubmodules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(r *fixtures.Repo)
	}{
		{"default index", func(r *fixtures.Repo) {}},
		{"index version 4", func(r *fixtures.Repo) { r.Git("update-index", "--index-version", "4") }},
		{"split index", func(r *fixtures.Repo) {
			r.Config("core.splitIndex", "true")
			r.Git("update-index", "--split-index")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := fixtures.NewRepo(t)
			r := fixtures.NewRepo(t)
			modified := r.AddSubmodule("sub/modified", src)
			untracked := r.AddSubmodule("sub/untracked", src)
			moved := r.AddSubmodule("sub/moved", src)
			r.AddSubmodule("sub/clean", src)
			tt.setup(r)
			nested := r.NestedRepo("nested")
			modified.WriteFile("README.md", "changed inside\n")
			untracked.WriteFile("new.txt", "untracked inside\n")
			moved.WriteFile("more.txt", "committed inside\n")
			movedHead := moved.Commit("move")
			r.WriteFile("top.txt", "a change of the superproject\n")
			index, status := r.IndexBytes(), r.StatusBytes()

			res, err := Snapshot(ctx, r.Dir, "with submodules")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"sub/modified", "sub/untracked"}, res.DirtySubmodules); diff != "" {
				t.Errorf("DirtySubmodules mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"nested"}, res.NestedRepositories); diff != "" {
				t.Errorf("NestedRepositories mismatch (-want +got):\n%s", diff)
			}
			tree := r.LsTree(res.Commit)
			for path, id := range map[string]string{"sub/moved": movedHead, "nested": nested.Head(), "sub/modified": src.Head()} {
				if want := "160000 commit " + id; tree[path] != want {
					t.Errorf("%s in snapshot = %q, want %q", path, tree[path], want)
				}
			}
			if want := (gitops.Counts{Added: 2, Modified: 1}); res.Files != want {
				t.Errorf("Files = %+v, want %+v", res.Files, want)
			}
			fixtures.SameBytes(t, "index", index, r.IndexBytes())
			fixtures.SameBytes(t, "git status output", []byte(status), []byte(r.StatusBytes()))
			noTempIndex(t, r)
		})
	}
}

func TestSnapshotDirtySubmoduleOnly(t *testing.T) {
	t.Parallel()
	src := fixtures.NewRepo(t)
	r := fixtures.NewRepo(t)
	sub := r.AddSubmodule("sub", src)
	sub.WriteFile("README.md", "changed inside\n")
	res, err := Snapshot(ctx, r.Dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing the superproject can capture, but the caller must learn
	// that the submodule holds work.
	if !res.Clean || res.Commit != "" || !cmp.Equal(res.DirtySubmodules, []string{"sub"}) {
		t.Errorf("Snapshot = %+v, want clean with sub dirty", res)
	}
}

func TestSnapshotFailures(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.Mkdir("sub")
	_, err := Snapshot(ctx, r.Path("sub"), "m")
	if !errors.Is(err, gitops.ErrNotTopLevel) {
		t.Errorf("Snapshot of a subdirectory: %v, want ErrNotTopLevel", err)
	}
	_, err = Snapshot(ctx, fixtures.TempDir(t), "m")
	if !errors.Is(err, gitops.ErrNotTopLevel) {
		t.Errorf("Snapshot outside a repository: %v, want ErrNotTopLevel", err)
	}

	// git add refuses a nested repository without a commit: the snapshot
	// fails, and leaves nothing behind.
	fixtures.InitRepo(t, r.Path("empty-nested"))
	r.WriteFile("change.txt", "x\n")
	index := r.IndexBytes()
	_, err = Snapshot(ctx, r.Dir, "m")
	var e *gitops.Error
	if !errors.As(err, &e) || e.ExitCode == 0 || !slices.Contains(e.Args, "add") {
		t.Fatalf("Snapshot with an unaddable nested repository: %v, want a git add *Error", err)
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())
	noTempIndex(t, r)
}

// TestSnapshotGlobalExcludesFile checks that the user's global config is
// kept: core.excludesFile set there is honoured. It changes the test
// binary's global config, so it does not run in parallel.
func TestSnapshotGlobalExcludesFile(t *testing.T) {
	r := fixtures.NewRepo(t)
	excludes := filepath.Join(fixtures.TempDir(t), "global-excludes")
	if err := os.WriteFile(excludes, []byte("*.global\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.SetGlobalConfig(t, "core.excludesFile", excludes)
	r.WriteFile("skip.global", "ignored by the global excludes file\n")
	r.WriteFile("keep.txt", "kept\n")
	res, err := Snapshot(ctx, r.Dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	tree := r.LsTree(res.Commit)
	if _, ok := tree["skip.global"]; ok {
		t.Errorf("snapshot captured a file ignored by the global core.excludesFile")
	}
	if _, ok := tree["keep.txt"]; !ok {
		t.Errorf("snapshot missed keep.txt")
	}
	ignored, err := gitops.CheckIgnore(ctx, r.Dir, "skip.global")
	if err != nil || !ignored {
		t.Errorf("CheckIgnore(skip.global) = %v, %v; want true", ignored, err)
	}
}

func TestSnapshotSHA256(t *testing.T) {
	t.Parallel()
	dir := fixtures.TempDir(t)
	fixtures.Git(t, dir, "init", "--quiet", "--initial-branch=main", "--object-format=sha256")
	r := &fixtures.Repo{T: t, Dir: dir}
	res, err := Snapshot(ctx, r.Dir, "unborn")
	if err != nil || !res.Clean || res.Tree != emptyTree(64) {
		t.Fatalf("Snapshot of an empty sha256 repository = %+v, %v", res, err)
	}
	r.WriteFile("a.txt", "a\n")
	head := r.Commit("a")
	r.WriteFile("a.txt", "changed\n")
	r.WriteFile("b.txt", "new\n")
	res, err = Snapshot(ctx, r.Dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	if res.Parent != head || len(res.Commit) != 64 || res.Files != (gitops.Counts{Added: 1, Modified: 1}) {
		t.Errorf("Snapshot in a sha256 repository = %+v", res)
	}
	if got := r.Blob(res.Commit, "a.txt"); got != "changed\n" {
		t.Errorf("a.txt = %q", got)
	}
	if err := gitops.UpdateRefCreate(ctx, r.Dir, "refs/majlis/salvage/x/1", res.Commit); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotIgnoredSubmoduleMoved: a submodule configured with
// ignore=all is hidden from git status, but its new commit is part of the
// snapshot, which is therefore not clean.
func TestSnapshotIgnoredSubmoduleMoved(t *testing.T) {
	t.Parallel()
	src := fixtures.NewRepo(t)
	r := fixtures.NewRepo(t)
	sub := r.AddSubmodule("sub", src)
	r.Git("config", "-f", ".gitmodules", "submodule.sub.ignore", "all")
	r.Config("diff.ignoreSubmodules", "all")
	r.Commit("ignore the submodule")
	sub.WriteFile("x.txt", "x\n")
	moved := sub.Commit("move")
	res, err := Snapshot(ctx, r.Dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean || res.Files != (gitops.Counts{Modified: 1}) {
		t.Fatalf("Snapshot = %+v; want the submodule's new commit captured", res)
	}
	if got := r.LsTree(res.Commit)["sub"]; got != "160000 commit "+moved {
		t.Errorf("sub in snapshot = %q, want %s", got, moved)
	}
}

// TestSnapshotConcurrent: salvages of one worktree at once do not disturb
// each other (each has its own temporary index) and agree.
func TestSnapshotConcurrent(t *testing.T) {
	t.Parallel()
	r := base(t)
	dirty(r)
	index := r.IndexBytes()
	const n = 4
	trees := make([]string, n)
	errs := make([]error, n)
	done := make(chan int)
	for i := range n {
		go func() {
			var res SnapshotResult
			res, errs[i] = Snapshot(ctx, r.Dir, fmt.Sprintf("salvage %d", i))
			trees[i] = res.Tree
			done <- i
		}()
	}
	for range n {
		<-done
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if trees[i] != trees[0] {
			t.Errorf("snapshot %d has tree %s, snapshot 0 has %s", i, trees[i], trees[0])
		}
	}
	fixtures.SameBytes(t, "index", index, r.IndexBytes())
	noTempIndex(t, r)
}

// A salvage must not fail because the user configured no identity.
func TestSnapshotWithoutIdentity(t *testing.T) {
	repo := fixtures.NewRepo(t)
	repo.WriteFile("work.txt", "unsaved\n")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	empty := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(empty, []byte("[user]\n\tuseConfigOnly = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", empty)
	res, err := Snapshot(t.Context(), repo.Dir, "salvage")
	if err != nil {
		t.Fatalf("snapshot without an identity: %v", err)
	}
	if res.Clean || res.Commit == "" {
		t.Fatalf("nothing captured: %+v", res)
	}
	if who := repo.Git("log", "-1", "--format=%an <%ae>", res.Commit); !strings.Contains(who, "majlis salvage <majlis@localhost>") {
		t.Errorf("salvage commit signed %q", who)
	}
}

// TestSnapshotHiddenEditStatClean checks a hidden edit is salvaged when
// the edited file's stat data still matches its index entry: same size,
// same mtime, same inode, and the index written later, so git has no
// racy-git reason to re-read it. git never refreshes a flagged entry, so
// its stat data is whatever it was when the flag was set; an edit in the
// same second as that (the round trip's "detach and commit" then
// "assume-unchanged edit") keeps it matching. Clearing the flag in the
// private index is then not enough: git add -A trusts the stat data and
// keeps the old blob, and reclaim would delete the edit.
func TestSnapshotHiddenEditStatClean(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--assume-unchanged", "--skip-worktree"} {
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			r := fixtures.NewRepo(t)
			r.Config("core.trustctime", "false") // the rewrite below changes ctime
			stamp := time.Now().Add(-time.Hour).Truncate(time.Second)
			r.WriteFile("hidden.txt", "before\n")
			if err := os.Chtimes(r.Path("hidden.txt"), stamp, stamp); err != nil {
				t.Fatal(err)
			}
			r.Commit("hidden")
			r.Git("update-index", flag, "--", "hidden.txt")
			// Same size, same mtime, same inode: only the content differs.
			if err := os.WriteFile(r.Path("hidden.txt"), []byte("after!\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(r.Path("hidden.txt"), stamp, stamp); err != nil {
				t.Fatal(err)
			}
			// WorktreeTree computes the same tree without a commit.
			st, err := WorktreeTree(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if st.Tree == st.HeadTree {
				t.Errorf("WorktreeTree gives HEAD's tree: it missed the hidden edit")
			}
			res, err := Snapshot(ctx, r.Dir, "hidden")
			if err != nil {
				t.Fatal(err)
			}
			if tree := r.RevParse(res.Commit + "^{tree}"); tree != st.Tree {
				t.Errorf("WorktreeTree %s, Snapshot's tree %s", st.Tree, tree)
			}
			if want := []HiddenFile{{Path: "hidden.txt", Flag: strings.TrimPrefix(flag, "--"), Change: "modified"}}; !cmp.Equal(want, res.Survey.Hidden) {
				t.Errorf("Hidden: %s", cmp.Diff(want, res.Survey.Hidden))
			}
			if res.Clean {
				t.Fatalf("Snapshot missed a hidden edit whose stat data matches its index entry")
			}
			if got := r.Blob(res.Commit, "hidden.txt"); got != "after!\n" {
				t.Errorf("hidden.txt in snapshot = %q, want %q", got, "after!\n")
			}
		})
	}
}

// TestSurveyPinsCommitOnlyAStashReaches: a commit made on a detached HEAD,
// with a stash made on top of it, is reached by refs/stash alone. The
// stash is shared by every worktree and an entry goes when anyone drops
// it, so the commit is still pinned (salvaged), not taken as kept.
func TestSurveyPinsCommitOnlyAStashReaches(t *testing.T) {
	t.Parallel()
	repo := fixtures.NewRepo(t)
	wt := repo.NewWorktree("wt")
	wt.Git("checkout", "--detach")
	wt.WriteFile("d.txt", "detached\n")
	detached := wt.Commit("detached")
	wt.WriteFile("d.txt", "stashed\n")
	wt.Git("stash")
	if got := wt.RevParse("refs/stash^1"); got != detached {
		t.Fatalf("the stash's parent is %s, want the detached commit %s", got, detached)
	}
	sv, err := SurveyWorktree(t.Context(), wt.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sv.Pins, func(p gitops.Pin) bool { return p.Commit == detached }) {
		t.Fatalf("the detached commit %s only the stash reaches is not pinned: %+v", detached, sv.Pins)
	}
}
