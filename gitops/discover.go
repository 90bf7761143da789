package gitops

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/config"
)

// discoverInProcess answers Discover without running git, for the
// ordinary repository only: a worktree whose .git is a directory (the main
// worktree) or a "gitdir:" file (a linked worktree, a separate git
// directory, a submodule), found by walking up from path's resolved form
// as git walks up from its working directory, within one file system,
// owned by this user, with a configuration that says nothing of a bare
// repository, another work tree, includes or format extensions. Every
// other case, and anything unexpected on the way, reports !ok and git is
// asked: then git decides, as before. Every command starts by finding its
// repository, and a git process costs about a millisecond.
//
// What it returns is what `git rev-parse --path-format=absolute
// --show-toplevel --git-dir --git-common-dir` prints there (a test holds
// the two to each other in every state it can build).
func discoverInProcess(path string) (Repo, bool) {
	if !plainGitEnvironment() {
		return Repo{}, false
	}
	dir, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Repo{}, false
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return Repo{}, false
	}
	dev := fi.Sys().(*syscall.Stat_t).Dev
	for {
		dotgit := filepath.Join(dir, ".git")
		fi, err := os.Lstat(dotgit)
		switch {
		case err == nil && fi.IsDir():
			return discoveredAt(dir, dotgit, "")
		case err == nil && fi.Mode().IsRegular():
			return discoveredAt(dir, "", dotgit)
		case err == nil || !os.IsNotExist(err):
			return Repo{}, false // a symbolic link, or unreadable
		}
		// No .git: git would take the folder itself for a git directory
		// (a bare repository, or a path inside one) if it looks like one.
		if exists(filepath.Join(dir, "HEAD")) || exists(filepath.Join(dir, "objects")) || exists(filepath.Join(dir, "refs")) {
			return Repo{}, false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Repo{}, false // not a repository: git says so
		}
		pfi, err := os.Stat(parent)
		if err != nil || pfi.Sys().(*syscall.Stat_t).Dev != dev {
			return Repo{}, false // git stops at a file system's boundary
		}
		dir = parent
	}
}

// discoveredAt checks and returns the repository whose worktree top level
// is top, with its .git directory dotgitDir or its .git file dotgitFile.
func discoveredAt(top, dotgitDir, dotgitFile string) (Repo, bool) {
	gitDir := dotgitDir
	if dotgitFile != "" {
		var err error
		if gitDir, err = WorktreeGitDir(top); err != nil || !owned(dotgitFile) {
			return Repo{}, false
		}
	}
	gitDir, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return Repo{}, false
	}
	commonDir := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		if dotgitDir != "" {
			return Repo{}, false // a main worktree's git directory names no other
		}
		c := strings.TrimRight(string(b), "\n")
		if c == "" || strings.ContainsAny(c, "\n\r\x00") {
			return Repo{}, false
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		if commonDir, err = filepath.EvalSymlinks(c); err != nil {
			return Repo{}, false
		}
	} else if !os.IsNotExist(err) {
		return Repo{}, false
	}
	if !validGitDir(gitDir, commonDir) || !owned(top) || !owned(gitDir) || !owned(commonDir) || !plainConfig(commonDir) {
		return Repo{}, false
	}
	return newRepo(top, gitDir, commonDir), true
}

// validGitDir reports whether gitDir is a git directory as git checks one
// before using it: a HEAD that is a symbolic ref into refs/ or an object
// id, and objects and refs folders in the common directory.
func validGitDir(gitDir, commonDir string) bool {
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return false
	}
	h := strings.TrimRight(string(head), "\n")
	if ref, ok := strings.CutPrefix(h, "ref: "); !ok && !IsObjectID(h) || ok && !strings.HasPrefix(ref, "refs/") {
		return false
	}
	for _, d := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(commonDir, d)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// plainConfig reports whether the repository's configuration leaves
// discovery as it is: format version 0 or 1, no extensions, no include,
// not bare, no core.worktree, nothing continued over lines. The text is
// searched as well as parsed, so that nothing a parser could read
// differently from git passes.
func plainConfig(commonDir string) bool {
	b, err := os.ReadFile(filepath.Join(commonDir, "config"))
	if err != nil {
		return false
	}
	lower := strings.ToLower(string(b))
	for _, word := range []string{"worktree", "include", "extensions", "\\\n", "\\\r"} {
		if strings.Contains(lower, word) {
			return false
		}
	}
	cfg := config.New()
	if err := config.NewDecoder(bytes.NewReader(b)).Decode(cfg); err != nil {
		return false
	}
	core := cfg.Section("core")
	switch core.Options.Get("repositoryformatversion") {
	case "", "0", "1":
	default:
		return false
	}
	bare := core.Options.GetAll("bare")
	return strings.Count(lower, "bare") == len(bare) && (len(bare) == 0 || len(bare) == 1 && strings.EqualFold(bare[0], "false"))
}

// plainGitEnvironment reports whether no variable that changes how git
// finds a repository is set (git runs with the caller's environment, but
// for the variables majlis strips): a ceiling, crossing file systems,
// configuration given on the command line (-c, which could name a safe
// directory), git's own test switches. Configuration files say nothing
// of where the repository is: git reads core.worktree and core.bare for
// that from the repository's own configuration only.
func plainGitEnvironment() bool {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case !strings.HasPrefix(k, "GIT_") || strippedEnv[k]:
		case k == "GIT_CEILING_DIRECTORIES", k == "GIT_DISCOVERY_ACROSS_FILESYSTEM", k == "GIT_IMPLICIT_WORK_TREE",
			k == "GIT_CONFIG", k == "GIT_CONFIG_PARAMETERS", k == "GIT_CONFIG_COUNT",
			strings.HasPrefix(k, "GIT_CONFIG_KEY_"), strings.HasPrefix(k, "GIT_CONFIG_VALUE_"), strings.HasPrefix(k, "GIT_TEST_"):
			return false
		}
	}
	return true
}

// owned reports whether path belongs to the user majlis runs as, so that
// git's safe.directory check (which refuses a repository someone else
// owns) has nothing to say. Run as root by sudo, git checks the invoking
// user: git decides then.
func owned(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	euid := os.Geteuid()
	if euid == 0 && os.Getenv("SUDO_UID") != "" {
		return false
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid) == euid
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
