package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// discoverCase is one place Discover is asked about; inProcess says
// whether it must be answered without git (the ordinary repository).
type discoverCase struct {
	name      string
	path      string
	inProcess bool
}

// checkDiscoverAgrees holds discoverInProcess to git: where it answers,
// git answers the same; where the case says it must answer, it does.
func checkDiscoverAgrees(t *testing.T, cases []discoverCase) {
	t.Helper()
	for _, c := range cases {
		abs, err := filepath.Abs(c.path)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := discoverInProcess(abs)
		want, gerr := discoverByGit(ctx, abs)
		switch {
		case ok && gerr != nil:
			t.Errorf("%s: answered in process (%+v) where git fails: %v", c.name, got, gerr)
		case ok:
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: in process differs from git (-git +in process):\n%s", c.name, diff)
			}
		}
		if ok != c.inProcess {
			t.Errorf("%s: answered in process: %v, want %v (git: %+v, %v)", c.name, ok, c.inProcess, want, gerr)
		}
	}
}

// TestDiscoverInProcessAgreesWithGit walks the repository layouts a
// command can start in: the ordinary ones are answered without git and
// exactly as git answers; every unusual one is left to git.
func TestDiscoverInProcessAgreesWithGit(t *testing.T) {
	t.Parallel()
	main := fixtures.NewRepo(t)
	main.Mkdir("sub/deeper")
	linked := main.AddWorktree(filepath.Join(fixtures.TempDir(t), "linked worktree"), "feature")
	linked.Mkdir("src")
	links := fixtures.TempDir(t)
	symlink(t, main.Path("sub"), filepath.Join(links, "to-sub"))
	symlink(t, linked.Dir, filepath.Join(links, "to-linked"))

	separate := fixtures.TempDir(t)
	fixtures.Git(t, separate, "init", "--quiet", "--separate-git-dir", filepath.Join(fixtures.TempDir(t), "sep.git"), "work")

	relative := fixtures.NewRepo(t)
	moved := filepath.Join(filepath.Dir(relative.Dir), "gitdir-elsewhere")
	if err := os.Rename(filepath.Join(relative.Dir, ".git"), moved); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(relative.Dir, ".git"), "gitdir: ../gitdir-elsewhere\r\n")

	withSub := fixtures.NewRepo(t)
	sub := withSub.AddSubmodule("modules/lib", fixtures.NewRepo(t))
	nested := main.NestedRepo("sub/inner")

	symlinkedGit := fixtures.NewRepo(t)
	elsewhere := filepath.Join(fixtures.TempDir(t), "dotgit")
	if err := os.Rename(filepath.Join(symlinkedGit.Dir, ".git"), elsewhere); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, filepath.Join(symlinkedGit.Dir, ".git"))

	headFile := fixtures.NewRepo(t)
	headFile.WriteFile("docs/HEAD", "not a ref\n")

	configured := func(key, value string) *fixtures.Repo {
		r := fixtures.NewRepo(t)
		r.Config(key, value)
		return r
	}
	coreWorktree := configured("core.worktree", fixtures.TempDir(t))
	coreBare := configured("core.bare", "true")
	include := configured("include.path", filepath.Join(fixtures.TempDir(t), "more"))
	worktreeConfig := configured("extensions.worktreeConfig", "true")
	worktreeConfig.Config("core.repositoryformatversion", "1")
	bareWord := configured("remote.origin.url", "/srv/bare/x.git")

	bare := filepath.Join(fixtures.TempDir(t), "bare.git")
	fixtures.Git(t, filepath.Dir(bare), "init", "--quiet", "--bare", bare)

	checkDiscoverAgrees(t, []discoverCase{
		{"main top level", main.Dir, true},
		{"main subdirectory", main.Path("sub/deeper"), true},
		{"linked top level", linked.Dir, true},
		{"linked subdirectory", linked.Path("src"), true},
		{"through a link into the main worktree", filepath.Join(links, "to-sub"), true},
		{"through a link to a linked worktree", filepath.Join(links, "to-linked", "src"), true},
		{"separate git directory", filepath.Join(separate, "work"), true},
		{"relative gitdir file", relative.Dir, true},
		{"submodule (its git directory names its work tree)", sub.Dir, false},
		{"repository nested in a worktree", nested.Dir, true},
		{"above a nested repository", main.Path("sub"), true},
		{".git a symbolic link", symlinkedGit.Dir, false},
		{"a folder holding a file named HEAD", headFile.Path("docs"), false},
		{"core.worktree", coreWorktree.Dir, false},
		{"core.bare in a worktree", coreBare.Dir, false},
		{"include in the config", include.Dir, false},
		{"extensions.worktreeConfig", worktreeConfig.Dir, false},
		{"the word bare elsewhere in the config", bareWord.Dir, false},
		{"bare repository", bare, false},
		{"inside a git directory", filepath.Join(main.Dir, ".git", "refs"), false},
		{"outside any repository", fixtures.TempDir(t), false},
	})
}

// TestDiscoverInProcessLeavesGitEnvironmentToGit: a variable that changes
// how git finds a repository or reads its configuration sends Discover to
// git; those majlis strips before running git do not.
func TestDiscoverInProcessLeavesGitEnvironmentToGit(t *testing.T) {
	r := fixtures.NewRepo(t)
	for _, kv := range []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(r.Dir), "GIT_DISCOVERY_ACROSS_FILESYSTEM=1",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_PARAMETERS='core.bare'='true'", "GIT_TEST_ASSUME_DIFFERENT_OWNER=1"} {
		k, v, _ := strings.Cut(kv, "=")
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			if got, ok := discoverInProcess(r.Dir); ok {
				t.Errorf("answered in process with %s set: %+v", k, got)
			}
		})
	}
	t.Run("GIT_DIR", func(t *testing.T) {
		t.Setenv("GIT_DIR", filepath.Join(fixtures.TempDir(t), "elsewhere"))
		checkDiscoverAgrees(t, []discoverCase{{"GIT_DIR set (stripped for git)", r.Dir, true}})
	})
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
