package provider

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/majlis-dev/majlis/fixtures"
	"github.com/majlis-dev/majlis/internal/durable"
)

// bareWithWorktree clones a repository bare and adds a linked worktree to
// it; the provider is registered and opened from that worktree.
func bareWithWorktree(t *testing.T) (bare string, wt string, p *Provider) {
	t.Helper()
	src := fixtures.NewRepo(t)
	dir := fixtures.TempDir(t)
	bare = filepath.Join(dir, "app.git")
	fixtures.Git(t, dir, "clone", "-q", "--bare", src.Dir, bare)
	wt = filepath.Join(dir, "wt")
	fixtures.Git(t, bare, "worktree", "add", "-q", wt)
	if _, err := Init(t.Context(), wt, InitOptions{WorkspaceRoot: filepath.Join(dir, "ws")}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), wt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return bare, wt, p
}

// TestAllocateRefusesPathsInsideGitDirs: a workspace path inside the
// common dir (of a bare repository, of a normal one, --allow-nested or
// not), inside majlis's state or an admin entry, is refused before
// anything is made, and every later command still works.
func TestAllocateRefusesPathsInsideGitDirs(t *testing.T) {
	t.Parallel()
	bare, _, p := bareWithWorktree(t)
	repo, q := newProvider(t)
	cases := []struct {
		p    *Provider
		path string
	}{
		{p, filepath.Join(bare, "refs", "heads", "zz")},
		{p, filepath.Join(bare, "majlis", "claims", "X")},
		{p, filepath.Join(bare, "worktrees", "wt", "inner")},
		{q, filepath.Join(repo.Dir, ".git", "refs", "heads", "zz")},
		{q, filepath.Join(repo.Dir, ".git", "majlis", "x")},
	}
	for _, c := range cases {
		for _, nested := range []bool{false, true} {
			_, err := c.p.Allocate(t.Context(), AllocateOptions{Binding: "T-1", Path: c.path, AllowNested: nested})
			if !errors.Is(err, ErrUnsafePath) {
				t.Errorf("allocate --path %s (allow nested %v): %v, want %v", c.path, nested, err, ErrUnsafePath)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(bare, "refs", "heads", "zz")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused allocation made %s: %v", filepath.Join(bare, "refs", "heads", "zz"), err)
	}
	if _, err := p.List(t.Context(), ListOptions{All: true}); err != nil {
		t.Errorf("list after the refusals: %v", err)
	}
	mustAllocate(t, p, AllocateOptions{Binding: "T-2"})
}

// separateGitDir makes a repository with `git init --separate-git-dir`
// and a linked worktree, registered from the main worktree.
func separateGitDir(t *testing.T) (main, gitdir string) {
	t.Helper()
	dir := fixtures.TempDir(t)
	main, gitdir = filepath.Join(dir, "main"), filepath.Join(dir, "store.git")
	fixtures.Git(t, dir, "init", "-q", "--separate-git-dir", gitdir, main)
	r := &fixtures.Repo{T: t, Dir: main}
	r.WriteFile("README.md", "main\n")
	r.Commit("initial")
	return main, gitdir
}

// TestSeparateGitDirMainWorktreeIsAPeer: in a repository whose git
// directory lives apart, the main worktree (which git lists as the git
// directory) is recorded at init and is a peer everywhere: an allocation
// inside it is refused from any worktree, a workspace inside it that it
// does not ignore cannot be reclaimed, and the preview lists it.
func TestSeparateGitDirMainWorktreeIsAPeer(t *testing.T) {
	t.Parallel()
	main, gitdir := separateGitDir(t)
	if _, err := Init(t.Context(), main, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), main, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.reg.MainWorktree != main {
		t.Fatalf("registered main worktree %q, want %q", p.reg.MainWorktree, main)
	}
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	// Opened from the linked worktree, where git cannot say where the main one is.
	lp, err := Open(t.Context(), ws.Path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	if _, err := lp.Allocate(t.Context(), AllocateOptions{Binding: "T-2", Path: filepath.Join(main, "inner")}); !errors.Is(err, ErrNested) {
		t.Fatalf("allocate inside the main worktree: %v, want %v", err, ErrNested)
	}
	pv, err := lp.PreviewReclaim(t.Context(), "T-1")
	if err != nil {
		t.Fatal(err)
	}
	if peerFind(pv.Peers, PeerMainWorktree, main) == nil {
		t.Errorf("the preview's peers lack the main worktree %s: %+v", main, pv.Peers)
	}
	// A workspace inside the main worktree (allowed explicitly) cannot be
	// reclaimed: the main worktree contains it and does not ignore it.
	inner := mustAllocate(t, lp, AllocateOptions{Binding: "T-3", Path: filepath.Join(main, "inner"), AllowNested: true})
	if _, err := lp.Reclaim(t.Context(), ReclaimOptions{Binding: "T-3", Yes: true}); !errors.Is(err, ErrPeerOverlap) {
		t.Fatalf("reclaim of a workspace inside the main worktree: %v, want %v", err, ErrPeerOverlap)
	}
	if _, err := os.Stat(inner.Path); err != nil {
		t.Fatal(err)
	}
	_ = gitdir
}

// TestSeparateGitDirOldRegistration: a registration without the main
// worktree (made by an older majlis) is read; from the main worktree the
// main worktree is discovered, from a linked one the operations that need
// every peer refuse rather than miss it; init from a linked worktree of
// such a repository refuses with what to do.
func TestSeparateGitDirOldRegistration(t *testing.T) {
	t.Parallel()
	main, gitdir := separateGitDir(t)
	linked := filepath.Join(filepath.Dir(main), "linked")
	fixtures.Git(t, main, "worktree", "add", "-q", linked)
	if _, err := Init(t.Context(), linked, InitOptions{WorkspaceRoot: filepath.Join(filepath.Dir(main), "ws")}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "main worktree") {
		t.Fatalf("init from a linked worktree of a separate git dir: %v, want invalid_argument naming the main worktree", err)
	}
	// An old registration, as majlis wrote it before the field existed.
	state := filepath.Join(gitdir, "majlis")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	reg := Registration{Format: formatRepository, ID: newID(), CommonDir: gitdir,
		WorkspaceRoot: filepath.Join(filepath.Dir(main), "ws"), CreatedAt: time.Now().UTC()}
	data, _, err := seal("repository", &reg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "main_worktree") {
		t.Fatal("an old registration must not carry main_worktree")
	}
	if err := durable.Publish(state, "repository.json", data); err != nil {
		t.Fatal(err)
	}
	if err := createJournal(state); err != nil {
		t.Fatal(err)
	}
	p, err := Open(t.Context(), main, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ws := mustAllocate(t, p, AllocateOptions{Binding: "T-1"})
	if _, err := p.Allocate(t.Context(), AllocateOptions{Binding: "T-2", Path: filepath.Join(main, "inner")}); !errors.Is(err, ErrNested) {
		t.Fatalf("allocate inside the main worktree, from it: %v, want %v", err, ErrNested)
	}
	lp, err := Open(t.Context(), ws.Path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	if _, err := lp.Allocate(t.Context(), AllocateOptions{Binding: "T-2", Path: filepath.Join(main, "inner")}); !errors.Is(err, ErrIdentity) {
		t.Fatalf("allocate from a linked worktree, the main one unknown: %v, want %v", err, ErrIdentity)
	}
	if _, err := lp.PreviewReclaim(t.Context(), "T-1"); !errors.Is(err, ErrIdentity) {
		t.Fatalf("preview from a linked worktree, the main one unknown: %v, want %v", err, ErrIdentity)
	}
	if _, err := p.PreviewReclaim(t.Context(), "T-1"); err != nil {
		t.Fatalf("preview from the main worktree: %v", err)
	}
}

// TestBareRepositoryInIgnoredFolderIsAPeer: a bare repository, and a
// directory git would open as a git directory, inside a workspace's
// ignored folder are nested repositories: the reclaim refuses and leaves
// them.
func TestBareRepositoryInIgnoredFolderIsAPeer(t *testing.T) {
	t.Parallel()
	repo, p := peerProvider(t)
	src := fixtures.NewRepo(t)
	for _, kind := range []string{"bare", "gitdir"} {
		binding := "T-" + kind
		ws := mustAllocate(t, p, AllocateOptions{Binding: binding})
		var dir string
		switch kind {
		case "bare":
			dir = filepath.Join(ws.Path, "build", "cache.git")
			fixtures.Git(t, ws.Path, "clone", "-q", "--bare", src.Dir, dir)
		case "gitdir":
			// A copy of a repository's .git under another name.
			dir = filepath.Join(ws.Path, "build", "moved-dotgit")
			fixtures.Git(t, ws.Path, "clone", "-q", "--bare", src.Dir, dir)
			fixtures.Git(t, dir, "config", "core.bare", "false")
		}
		peers := peerList(t, p, binding)
		if pr := peerFind(peers, PeerNestedRepo, dir); pr == nil || !pr.Overlaps {
			t.Errorf("%s: the peers lack the nested repository %s: %+v", kind, dir, peers)
		}
		if _, err := p.Reclaim(t.Context(), ReclaimOptions{Binding: binding, Yes: true}); !errors.Is(err, ErrPeerOverlap) {
			t.Errorf("%s: reclaim with a repository in build/: %v, want %v", kind, err, ErrPeerOverlap)
		}
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
			t.Errorf("%s: the nested repository is damaged: %v", kind, err)
		}
	}
	_ = repo
}

// TestBareRepositoryAsRepoRefuses: majlis run in a bare repository
// refuses with a usage error that says what to do.
func TestBareRepositoryAsRepoRefuses(t *testing.T) {
	t.Parallel()
	bare, _, _ := bareWithWorktree(t)
	for _, f := range []func() error{
		func() error { _, err := Init(t.Context(), bare, InitOptions{WorkspaceRoot: t.TempDir()}); return err },
		func() error { _, err := Open(t.Context(), bare, Options{}); return err },
	} {
		err := f()
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "worktree add") {
			t.Errorf("in a bare repository: %v, want invalid_argument saying to add a worktree", err)
		}
	}
}
