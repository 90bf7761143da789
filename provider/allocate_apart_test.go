package provider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
	"golang.org/x/sys/unix"
)

// aliasLayout is a repository with git worktrees (plain `git worktree
// add`, not workspaces) reachable under other names, and the paths an
// allocation may be asked for in and around them.
type aliasLayout struct {
	repo   *fixtures.Repo
	p      *Provider
	root   string
	bind   bool     // root/bind is a bind mount of root/real
	inside []string // paths inside a worktree under some name: refused
	around []string // paths around missing worktrees, by name or through links to folders not made yet: refused
	apart  []string // paths apart from every worktree: allowed
}

func newAliasLayout(t *testing.T) *aliasLayout {
	repo, p := newProvider(t)
	root := t.TempDir()
	l := &aliasLayout{repo: repo, p: p, root: root}
	at := func(rel string) string { return filepath.Join(root, rel) }
	mkdir := func(rel string) {
		if err := os.MkdirAll(at(rel), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, rel string) {
		if err := os.Symlink(target, at(rel)); err != nil {
			t.Fatal(err)
		}
	}
	add := func(rel string) string {
		repo.Git("worktree", "add", "--quiet", "--detach", at(rel), "HEAD")
		return at(rel)
	}
	// register records the worktree at w as git would under the name
	// as, unresolved (an older git, or a repair by hand).
	register := func(w, as string) {
		if err := os.WriteFile(filepath.Join(fixtures.AdminDir(t, w), "gitdir"), []byte(as+"/.git\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("real/a/b")
	add("real/plain")
	symlink(at("real/plain"), "to-plain")     // an absolute link to a worktree
	symlink("real", "rel-real")               // a relative link to its parent
	symlink("rel-real/plain", "rel-to-plain") // a relative link through a relative link
	register(add("real/linked"), at("rel-real/linked"))
	symlink(at("real/a/b"), "deep")
	register(add("real/a/x"), at("deep")+"/../x") // ".." after a link: real/a/x to the kernel
	symlink(at("real/self"), "wtlink")
	register(add("real/self"), at("wtlink")) // registered as a link to itself
	gone := add("gone")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	symlink(repo.Dir, "to-main")
	// Links that lead into folders that do not exist yet, and a worktree
	// registered through each; the worktrees are missing (prunable).
	symlink(at("real/new"), "to-new")
	register(add("later/wt"), at("to-new/wt"))
	symlink(at("real/new2"), "to-new2")
	register(add("later2"), at("to-new2"))
	for _, rel := range []string{"later/wt", "later2"} {
		if err := os.RemoveAll(at(rel)); err != nil {
			t.Fatal(err)
		}
	}
	// A bind mount of real, when this process may make one.
	mkdir("bind")
	if err := unix.Mount(at("real"), at("bind"), "", unix.MS_BIND, ""); err == nil {
		l.bind = true
		t.Cleanup(func() { _ = unix.Unmount(at("bind"), unix.MNT_DETACH) })
	} else {
		t.Logf("no bind mount (%v): that case is skipped", err)
	}

	l.inside = []string{
		at("real/plain/inner"), at("to-plain/inner"), at("rel-real/plain/inner"), at("rel-to-plain/inner"),
		at("to-plain/d/e/f"), at("real/linked/inner"), at("rel-real/linked/inner"),
		at("real/a/x/inner"), at("deep/../x/inner/y"), at("real/self/inner"), at("wtlink/inner"),
		at("to-main/inner"), filepath.Join(repo.Dir, "inner"),
	}
	if l.bind {
		l.inside = append(l.inside, at("bind/plain/inner"), at("bind/linked/inner"), at("bind/self/d/inner"))
	}
	l.around = []string{at("real/new"), at("real/new/wt"), at("real/new2"), at("to-new/wt/in"), at("gone/inner")}
	l.apart = []string{at("beside"), at("real/beside"), at("rel-real/beside2"), at("real/a/b/c")}
	return l
}

// TestApartFromSkipsNoWorktreeTheFullCheckRefuses compares apartFrom with
// the check it saves (checkNesting through a resolver, as before it):
// for every path an allocation may be asked for in an alias layout, no
// worktree apartFrom proves apart is one the full check would refuse or
// clear. That is, the new code refuses at least everything the old did.
func TestApartFromSkipsNoWorktreeTheFullCheckRefuses(t *testing.T) {
	t.Parallel()
	l := newAliasLayout(t)
	worktrees, err := gitops.WorktreePaths(t.Context(), l.p.reg.CommonDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worktrees: %q", worktrees)
	for _, raw := range append(append(append([]string{}, l.inside...), l.around...), l.apart...) {
		path, err := pathid.Lexical(raw)
		if err != nil {
			t.Fatal(err)
		}
		physical, err := pathid.Physical(path)
		if err != nil {
			t.Logf("%s: no physical form (%v): allocate refuses it", path, err)
			continue
		}
		apart, _ := apartFrom(path, physical, worktrees)
		for i, w := range worktrees {
			if !apart[i] {
				continue
			}
			ignored, err := l.p.checkNesting(t.Context(), AllocateOptions{Binding: "X"}, path, physical, w, "worktree", pathid.NewResolver().Physical)
			if err != nil || ignored {
				t.Errorf("%s: apartFrom skips the worktree %s, which the full check refuses or clears (%v, ignored %v)", path, w, err, ignored)
			}
		}
	}
}

// TestAllocateRefusesPathInsideGitWorktreeUnderAnyName: a path inside a
// git worktree under any name (absolute and relative links, a link
// through a link, ".." after a link, a worktree registered through a
// link or as a link to itself, the main worktree through a link, a bind
// mount) is refused as nested, and so is a path around a missing
// worktree, also one registered through a link to a folder not made yet;
// the refusal leaves nothing: no folder, no worktree, no workspace.
func TestAllocateRefusesPathInsideGitWorktreeUnderAnyName(t *testing.T) {
	t.Parallel()
	l := newAliasLayout(t)
	n := 0
	try := func(path string) error {
		n++
		binding := fmt.Sprintf("N-%d", n)
		before := l.repo.Git("worktree", "list", "--porcelain")
		_, err := l.p.Allocate(t.Context(), AllocateOptions{Binding: binding, Path: path})
		if err == nil {
			return nil
		}
		if after := l.repo.Git("worktree", "list", "--porcelain"); after != before {
			t.Errorf("%s: a refused allocation changed git's worktrees:\n%s", path, cmp.Diff(before, after))
		}
		if _, serr := os.Lstat(path); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: a refused allocation made it (%v)", path, err)
		}
		ws, lerr := l.p.List(t.Context(), ListOptions{})
		if lerr != nil {
			t.Fatal(lerr)
		}
		for _, w := range ws {
			if w.Binding == binding && w.State != "failed" {
				t.Errorf("%s: a refused allocation left workspace %s in state %s", path, binding, w.State)
			}
		}
		return err
	}
	for _, path := range l.inside {
		if err := try(path); !errors.Is(err, ErrNested) {
			t.Errorf("allocate at %s: %v, want ErrNested", path, err)
		}
	}
	for _, path := range l.around {
		// ErrNested, or git's refusal, or a path through a dangling link.
		if err := try(path); err == nil {
			t.Errorf("allocate at %s: a workspace, want a refusal", path)
		}
	}
	for _, path := range l.apart {
		if err := try(path); err != nil {
			t.Errorf("allocate at %s: %v, want a workspace", path, err)
		}
	}
}

// TestAllocateRefusesPathInsideSeparateMainWorktreeByLink: the main
// worktree of a repository whose git directory lives apart (which git
// does not list as a worktree) is a worktree like the others to the
// nesting check, under another name too.
func TestAllocateRefusesPathInsideSeparateMainWorktreeByLink(t *testing.T) {
	t.Parallel()
	main, _ := separateGitDir(t)
	if _, err := Init(t.Context(), main, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), main, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	root := t.TempDir()
	if err := os.Symlink(main, filepath.Join(root, "to-main")); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(root, "to-main", "inner")}
	if err := os.Mkdir(filepath.Join(root, "bind"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(main, filepath.Join(root, "bind"), "", unix.MS_BIND, ""); err == nil {
		t.Cleanup(func() { _ = unix.Unmount(filepath.Join(root, "bind"), unix.MNT_DETACH) })
		paths = append(paths, filepath.Join(root, "bind", "inner"))
	}
	for i, path := range paths {
		if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: fmt.Sprintf("M-%d", i), Path: path}); !errors.Is(err, ErrNested) {
			t.Errorf("allocate at %s: %v, want ErrNested", path, err)
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused allocation made %s", path)
		}
	}
	mustAllocate(t, p, AllocateOptions{Binding: "beside", Path: filepath.Join(root, "beside")})
}

// TestAllocateRefusesPathAroundWorktreeThroughDanglingLink: a git
// worktree that is missing (prunable) and registered through a symbolic
// link that leads into the new path, which does not exist yet, lies
// inside the path once it is made; a missing worktree that the path
// contains by name is refused, and so is this one.
func TestAllocateRefusesPathAroundWorktreeThroughDanglingLink(t *testing.T) {
	t.Parallel()
	repo, p := newProvider(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real", "new"), filepath.Join(root, "to-new")); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(root, "later", "wt")
	repo.Git("worktree", "add", "--quiet", "--detach", later, "HEAD")
	gitdir := filepath.Join(root, "to-new", "wt", ".git") + "\n"
	if err := os.WriteFile(filepath.Join(fixtures.AdminDir(t, later), "gitdir"), []byte(gitdir), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(later); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "real", "new") // to-new/wt, once made, is real/new/wt
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "D-1", Path: path}); !errors.Is(err, ErrNested) {
		t.Fatalf("allocate at %s: %v, want ErrNested", path, err)
	}
}

// TestApartFromProvesNothingOnceThePathExists: apartFrom proves a
// worktree apart because the path does not exist, so nothing can lie
// inside it. Should the path have been made since allocate looked (by
// another process), a worktree inside it under another name is not
// proven apart: the full check sees it.
func TestApartFromProvesNothingOnceThePathExists(t *testing.T) {
	t.Parallel()
	repo, _ := newProvider(t)
	root := t.TempDir()
	path := filepath.Join(root, "new")
	inner := filepath.Join(path, "inner")
	repo.Git("worktree", "add", "--quiet", "--detach", inner, "HEAD")
	if err := os.Symlink(inner, filepath.Join(root, "to-inner")); err != nil {
		t.Fatal(err)
	}
	byLink := filepath.Join(root, "to-inner")
	apart, _ := apartFrom(path, path, []string{byLink})
	if apart[0] {
		t.Fatalf("%s, inside the path %s that exists, is proven apart from it", byLink, path)
	}
}
