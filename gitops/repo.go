package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A Repo locates the worktree that contains a path, and the repository it
// belongs to. All paths are absolute and cleaned, as git reports them
// (symbolic links in the top level are resolved by git).
type Repo struct {
	// Toplevel is the top directory of the worktree containing the path.
	Toplevel string
	// GitDir is that worktree's own git directory: CommonDir for the main
	// worktree, CommonDir/worktrees/<name> for a linked one.
	GitDir string
	// CommonDir is the repository's common git directory, shared by all
	// its worktrees (objects, refs, config, info/exclude).
	CommonDir string
	// MainWorktree is the top directory of the repository's main worktree,
	// derived as git derives it (CommonDir without its trailing /.git). It
	// is empty when that cannot be known: the repository is bare, or its
	// git directory lives apart from the main worktree.
	MainWorktree string
}

// Linked reports whether the worktree is a linked worktree rather than the
// main one.
func (r Repo) Linked() bool { return r.GitDir != r.CommonDir }

// Discover finds the worktree and repository containing path, which may be
// any directory inside the main worktree or a linked worktree. It answers
// in process for an ordinary repository (discoverInProcess) and runs one
// git process otherwise. A path outside any repository gives
// ErrNotARepository; a bare repository or a path inside a git directory
// gives ErrNotAWorkTree; a missing path gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func Discover(ctx context.Context, path string) (Repo, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Repo{}, err
	}
	if r, ok := discoverInProcess(abs); ok {
		return r, nil
	}
	return discoverByGit(ctx, abs)
}

// discoverByGit is Discover by `git rev-parse` in abs.
func discoverByGit(ctx context.Context, abs string) (Repo, error) {
	res, err := Run(ctx, abs, Cmd{ReadOnly: true},
		"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		return Repo{}, err
	}
	return parseDiscover(res.Stdout)
}

// parseDiscover reads the three lines that Discover asks rev-parse for.
// rev-parse has no -z, so a path containing a newline cannot be told apart
// from two paths; such output is refused rather than guessed at.
func parseDiscover(out []byte) (Repo, error) {
	s, ok := strings.CutSuffix(string(out), "\n")
	lines := strings.Split(s, "\n")
	if !ok || len(lines) != 3 {
		return Repo{}, Unexpected("git rev-parse", "want 3 lines (toplevel, git dir, common dir), got %q", out)
	}
	for i, l := range lines {
		if !filepath.IsAbs(l) {
			return Repo{}, Unexpected("git rev-parse", "line %d is not an absolute path: %q", i+1, l)
		}
		lines[i] = filepath.Clean(l)
	}
	return newRepo(lines[0], lines[1], lines[2]), nil
}

// newRepo is the Repo of a worktree's top level, git directory and common
// directory, with its main worktree derived as git derives it.
func newRepo(toplevel, gitDir, commonDir string) Repo {
	r := Repo{Toplevel: toplevel, GitDir: gitDir, CommonDir: commonDir}
	switch {
	case !r.Linked():
		r.MainWorktree = r.Toplevel
	case filepath.Base(r.CommonDir) == ".git":
		r.MainWorktree = filepath.Dir(r.CommonDir)
	}
	return r
}

// WorktreeGitDir returns the git directory of the worktree whose top level
// is dir, read in process from dir/.git the way git reads it: a directory
// is the git directory itself, a file holds "gitdir: <path>" (relative to
// dir when not absolute). It never walks up: a directory without .git gives
// ErrNotTopLevel, because git run there would act on an enclosing
// repository. Reading the file saves spawning git (about as long as the
// rest of a small salvage); git itself then validates what it points to.
func WorktreeGitDir(dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		if os.IsNotExist(err) {
			return "", fmt.Errorf("%w: %s has no .git", ErrNotTopLevel, dir)
		}
		return "", err
	}
	if fi.IsDir() {
		return dotgit, nil
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(b), "\r\n")
	target, ok := strings.CutPrefix(s, "gitdir: ")
	if !ok || target == "" || strings.ContainsAny(target, "\n\x00") {
		return "", fmt.Errorf("%w: %s is not a gitdir file", ErrNotARepository, dotgit)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return filepath.Clean(target), nil
}

// TopLevel checks that dir is the top level of a worktree and returns it
// absolute, with the ceiling that keeps git from walking above it.
func TopLevel(dir string) (abs, ceiling string, err error) {
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if _, err := os.Lstat(filepath.Join(abs, ".git")); err != nil {
		if os.IsNotExist(err) {
			return "", "", fmt.Errorf("%w: %s has no .git", ErrNotTopLevel, abs)
		}
		return "", "", err
	}
	return abs, filepath.Dir(abs), nil
}

// OpenTree checks that dir is the top level of a worktree and returns it
// absolute, with options that name its git directory (read from dir/.git,
// see WorktreeGitDir) and its work tree explicitly, and the ceiling that
// keeps git from walking above it. Naming both overrides core.worktree and
// core.bare, which a worktree's own config (extensions.worktreeConfig)
// can set to aim git at another directory, such as the main worktree:
// whatever the configuration says, the command acts on dir. CheckWorkTree
// tells whether git left to itself would agree.
func OpenTree(dir string) (abs string, o Cmd, err error) {
	abs, ceiling, err := TopLevel(dir)
	if err != nil {
		return "", Cmd{}, err
	}
	gitDir, err := WorktreeGitDir(abs)
	if err != nil {
		return "", Cmd{}, err
	}
	return abs, Cmd{Ceiling: ceiling, GitDir: gitDir, WorkTree: abs}, nil
}

// treeOpts returns OpenTree's options when dir is the top level of a
// worktree, and plain options (git discovers the repository from dir)
// otherwise: for functions that accept any directory of a repository.
func treeOpts(dir string) Cmd {
	if _, o, err := OpenTree(dir); err == nil {
		return o
	}
	return Cmd{}
}
