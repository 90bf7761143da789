package salvage

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
)

// convertedPaths lists the paths the salvage commit's meta commit keeps
// the bytes of (convertedList), sorted.
func convertedPaths(t *testing.T, r *fixtures.Repo, res SnapshotResult) []string {
	t.Helper()
	if res.Layout.Meta == "" {
		return nil
	}
	out, err := r.TryGit("cat-file", "blob", res.Layout.Meta+":"+convertedList)
	if err != nil {
		return nil
	}
	var paths []string
	for _, rec := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
		f := strings.SplitN(rec, " ", 3)
		if len(f) != 3 {
			t.Fatalf("record %q", rec)
		}
		paths = append(paths, f[2])
	}
	sort.Strings(paths)
	return paths
}

// A salvage keeps the bytes of exactly the files whose checkout would
// differ from them, the salvage tree shows git's content, and a restore
// into a new worktree gives every file back byte for byte.
func TestSnapshotKeepsConvertedBytes(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile(".gitattributes", "* text=auto\n*.bin text\n")
	r.WriteFile("lf.txt", "lf\n")
	// Committed with CRLF on disk: git stores LF, and the worktree keeps
	// CRLF with its stat data in the index. git status calls it clean.
	r.WriteFile("committed.txt", "crlf\r\n")
	r.Commit("attributes")
	files := map[string]string{
		"lf.txt":        "lf\n",
		"committed.txt": "crlf\r\n",
		"README.md":     r.ReadFile("README.md"),
		"new-lf.txt":    "new\n",
		"new-crlf.txt":  "new\r\nfile\r\n",
		"img.bin":       "\x89PNG\r\n\x1a\n",
		"sub/dir/x.txt": "x\r\n",
	}
	r.WriteFiles(files)
	st, err := WorktreeTree(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Outside != 4 {
		t.Errorf("WorktreeTree counts %d files outside the tree, want 4", st.Outside)
	}
	res, err := Snapshot(ctx, r.Dir, "salvage")
	if err != nil {
		t.Fatal(err)
	}
	if res.Clean {
		t.Fatal("a worktree whose bytes a checkout would change is called clean")
	}
	want := []string{"committed.txt", "img.bin", "new-crlf.txt", "sub/dir/x.txt"}
	if diff := cmp.Diff(want, convertedPaths(t, r, res)); diff != "" {
		t.Errorf("converted files (-want +got):\n%s", diff)
	}
	if got := r.Git("show", res.Commit+":new-crlf.txt"); got != "new\nfile\n" {
		t.Errorf("the salvage tree holds new-crlf.txt as %q", got)
	}
	noTempIndex(t, r)

	dst := filepath.Join(fixtures.TempDir(t), "restored")
	if err := gitops.AddWorktree(ctx, r.Dir, gitops.AddOptions{Path: dst, Mode: gitops.Detached, Commit: res.Parent, LockReason: "test", NoCheckout: true}); err != nil {
		t.Fatal(err)
	}
	rep, err := RestoreInto(ctx, dst, res.Commit, res.Layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.NotRestored) > 0 {
		t.Errorf("not restored: %q", rep.NotRestored)
	}
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
		if err != nil || string(b) != want {
			t.Errorf("%s after restore is %q (%v), want %q", name, b, err, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dst, ".majlis-restore-*")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// Files as git checked them out come back from a checkout as they are:
// under core.autocrlf=true a clean worktree stays clean, and nothing is
// kept beside the tree. (A file written otherwise, README.md as the
// fixture wrote it before the setting, would be kept.)
func TestSnapshotCheckedOutUnderAutocrlfIsClean(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile("a.txt", "one\ntwo\n")
	r.Commit("a")
	r.Config("core.autocrlf", "true")
	r.Remove("a.txt")
	r.Remove("README.md")
	r.Git("checkout", "--", ".")
	if got := r.ReadFile("a.txt"); got != "one\r\ntwo\r\n" {
		t.Fatalf("git checked a.txt out as %q", got)
	}
	res, err := Snapshot(ctx, r.Dir, "salvage")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Clean {
		t.Errorf("a worktree as git checked it out is not clean: %+v", res)
	}
	r.WriteFile("b.txt", "b\r\n")
	if res, err = Snapshot(ctx, r.Dir, "salvage"); err != nil {
		t.Fatal(err)
	}
	if got := convertedPaths(t, r, res); len(got) != 0 {
		t.Errorf("kept the bytes of %q, which a checkout gives back", got)
	}
}

// Where git converts nothing, a salvage does not look for conversions.
func TestMayConvert(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(r *fixtures.Repo)
		want  bool
	}{
		{"nothing", func(r *fixtures.Repo) {}, false},
		{"core.autocrlf=false", func(r *fixtures.Repo) { r.Config("core.autocrlf", "false") }, false},
		{"core.autocrlf=true", func(r *fixtures.Repo) { r.Config("core.autocrlf", "true") }, true},
		{"core.autocrlf=input", func(r *fixtures.Repo) { r.Config("core.autocrlf", "input") }, true},
		{"core.attributesFile", func(r *fixtures.Repo) { r.Config("core.attributesFile", "/nonexistent") }, true},
		{"tracked .gitattributes", func(r *fixtures.Repo) {
			r.WriteFile("d/.gitattributes", "*.x ident\n")
			r.Commit("attributes")
		}, true},
		{"info/attributes", func(r *fixtures.Repo) {
			if err := os.WriteFile(filepath.Join(r.CommonDir(), "info", "attributes"), []byte("* text\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fixtures.NewRepo(t)
			tc.setup(r)
			sv, err := SurveyWorktree(ctx, r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := sv.mayConvert(func() bool { return false }); got != tc.want {
				t.Errorf("mayConvert = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWorktreeSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config             [][2]string
		fileMode, autocrlf bool
	}{
		{nil, false, false},
		{[][2]string{{"core.fileMode", "false"}}, true, false},
		{[][2]string{{"core.fileMode", "off"}, {"core.autocrlf", "Input"}}, true, true},
		{[][2]string{{"core.fileMode", "1"}, {"core.autocrlf", "yes"}}, false, true},
		{[][2]string{{"core.autocrlf", "0"}}, false, false},
	} {
		r := fixtures.NewRepo(t)
		r.Config("core.fileMode", "true")
		for _, kv := range tc.config {
			r.Config(kv[0], kv[1])
		}
		fm, cs, err := worktreeSettings(ctx, r.Dir, "")
		if err != nil {
			t.Fatal(err)
		}
		if fm != tc.fileMode || cs.autocrlf != tc.autocrlf || cs.attrSource {
			t.Errorf("%v: fileMode ignored %v, settings %+v; want %v, autocrlf %v", tc.config, fm, cs, tc.fileMode, tc.autocrlf)
		}
	}
}

// replaceNoFollow replaces a regular file only, and reaches it through no
// symbolic link.
func TestReplaceNoFollow(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "flink")); err != nil {
		t.Fatal(err)
	}
	if err := replaceNoFollow(dir, "link/f", gitops.ModeFile, []byte("x")); err == nil {
		t.Error("wrote through a symbolic link to a folder")
	}
	if err := replaceNoFollow(dir, "flink", gitops.ModeFile, []byte("x")); err == nil {
		t.Error("replaced a symbolic link")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "outside\n" {
		t.Errorf("the file outside holds %q", b)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("checked out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceNoFollow(dir, "a", gitops.ModeExecutable, []byte("raw\r\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "a"))
	if b, _ := os.ReadFile(filepath.Join(dir, "a")); err != nil || string(b) != "raw\r\n" || fi.Mode()&0o100 == 0 {
		t.Errorf("a holds %q, mode %v (%v)", b, fi.Mode(), err)
	}
	if err := replaceNoFollow(dir, "new/b", gitops.ModeFile, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new/b")); string(b) != "b" {
		t.Errorf("new/b holds %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("the folder holds %d entries, want 4 (a, flink, link, new)", len(entries))
	}
}

// An untracked .gitattributes, in no index, still decides how git add
// stores the files beside it.
func TestSnapshotUntrackedAttributes(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile(".gitattributes", "*.dat text\n")
	r.WriteFile("img.dat", "\x00\r\n")
	st, err := WorktreeTree(ctx, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Outside != 1 {
		t.Errorf("WorktreeTree counts %d files outside the tree, want 1", st.Outside)
	}
	res, err := Snapshot(ctx, r.Dir, "salvage")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"img.dat"}, convertedPaths(t, r, res)); diff != "" {
		t.Errorf("converted files (-want +got):\n%s", diff)
	}
}

// A salvage ref can come from anywhere: restore writes kept bytes only
// over the regular files of the salvage tree, never over .git.
func TestRestoreConvertedOnlyTreeFiles(t *testing.T) {
	t.Parallel()
	r := fixtures.NewRepo(t)
	r.WriteFile(".gitattributes", "*.dat text\n")
	r.Commit("attributes")
	r.WriteFile("img.dat", "\x00\r\n")
	res, err := Snapshot(ctx, r.Dir, "salvage")
	if err != nil {
		t.Fatal(err)
	}
	// The meta commit again, its list naming .git and a path the tree
	// does not hold, with the bytes of img.dat.
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	r.GitEnv(env, "read-tree", res.Layout.Meta+"^{tree}")
	forged := "100644 0 .git\x00100644 0 absent.dat\x00100644 0 img.dat\x00"
	f := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(f, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(r.Git("hash-object", "-w", f))
	r.GitEnv(env, "update-index", "--add", "--cacheinfo", "100644,"+id+","+convertedList)
	tree := strings.TrimSpace(r.GitEnv(env, "write-tree"))
	l := res.Layout
	l.Meta = strings.TrimSpace(r.Git("commit-tree", "-m", "forged meta", tree))
	args := []string{"commit-tree", "-m", l.Message("forged")}
	for _, p := range l.Parents() {
		args = append(args, "-p", p)
	}
	commit := strings.TrimSpace(r.Git(append(args, res.Tree)...))

	dst := filepath.Join(fixtures.TempDir(t), "restored")
	if err := gitops.AddWorktree(ctx, r.Dir, gitops.AddOptions{Path: dst, Mode: gitops.Detached, Commit: res.Parent, LockReason: "test", NoCheckout: true}); err != nil {
		t.Fatal(err)
	}
	dotGit, err := os.ReadFile(filepath.Join(dst, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RestoreInto(ctx, dst, commit, l)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, ".git")); string(b) != string(dotGit) {
		t.Errorf(".git holds %q after restore", b)
	}
	if _, err := os.Lstat(filepath.Join(dst, "absent.dat")); err == nil {
		t.Error("absent.dat was written")
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "img.dat")); string(b) != "\x00\r\n" {
		t.Errorf("img.dat holds %q", b)
	}
	want := []string{convertedList + ": .git: not a file of the salvage tree", convertedList + ": absent.dat: not a file of the salvage tree"}
	if diff := cmp.Diff(want, rep.NotRestored); diff != "" {
		t.Errorf("not restored (-want +got):\n%s", diff)
	}
}
