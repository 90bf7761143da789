package gitops

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/majlis-dev/majlis/fixtures"
)

// The many-worktrees add (worktree_steps.go) compared with one
// `git worktree add --lock -b`, both called as the provider calls them
// (from the common git directory), in the states a repository can be in
// when a workspace is allocated. Every difference in what either leaves
// (files, index, HEAD and its reflog, branch and its reflog, lock,
// per-worktree config and sparse patterns, the post-checkout hook's
// arguments, environment and working directory, the error) fails.

// fullAddState is everything compared between the two ways of adding.
type fullAddState struct {
	Err        bool
	Worktree   Worktree
	Files      []string
	Index      string
	Status     string
	HeadRef    string
	HeadReflog string
	Reflog     string
	AdminFiles []string
	Hook       string
}

// reflogTime matches the time and zone of a reflog entry.
var reflogTime = regexp.MustCompile(`> [0-9]+ [+-][0-9]{4}\t`)

// hookRecorder is a post-checkout hook that records, into log, its
// arguments, working directory, the GIT_ variables it was given, and
// what git says from there: the git directory, the top level, HEAD and
// how many paths status lists.
func hookRecorder(log string) string {
	return "#!/bin/sh\n{\n" +
		"echo \"args: $*\"\n" +
		"echo \"pwd: $(pwd)\"\n" +
		"env | grep '^GIT_' | grep -v '^GIT_CONFIG_NOSYSTEM\\|^GIT_TRACE\\|^GIT_IMPLICIT_WORK_TREE=\\|^GIT_PREFIX=' | sort\n" +
		"echo \"path: $(echo \"$PATH\" | cut -d: -f1)\"\n" +
		"echo \"elsewhere: $(git -C \"$OTHER_REPO\" rev-parse --absolute-git-dir 2>&1)\"\n" +
		"echo \"git-dir: $(git rev-parse --absolute-git-dir 2>&1)\"\n" +
		"echo \"top: $(git rev-parse --show-toplevel 2>&1)\"\n" +
		"echo \"head: $(git symbolic-ref -q HEAD || git rev-parse HEAD)\"\n" +
		"echo \"status: $(git status --porcelain 2>&1 | wc -l)\"\n" +
		"} >> '" + log + "' 2>&1\n"
}

func captureAdd(t *testing.T, commonDir, path, name, hookLog string, addErr error) fullAddState {
	t.Helper()
	norm := func(s string) string { return strings.ReplaceAll(s, name, "NAME") }
	s := fullAddState{Err: addErr != nil}
	wts, err := ListWorktrees(ctx, commonDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wts {
		if w.Path == path {
			s.Worktree = w
			s.Worktree.Path = norm(w.Path)
			s.Worktree.Branch = norm(w.Branch)
		}
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == path {
			return nil
		}
		rel, _ := filepath.Rel(path, p)
		if rel == ".git" {
			return nil
		}
		fi, _ := os.Lstat(p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		s.Files = append(s.Files, line)
		return nil
	})
	git := func(args ...string) string {
		out, err := runGitIn(path, args...)
		if err != nil {
			return "error: " + err.Error()
		}
		return norm(out)
	}
	if _, err := os.Lstat(filepath.Join(path, ".git")); err == nil {
		s.Index = git("ls-files", "-s", "-v", "--debug")
		s.Index = stripStatLines(s.Index)
		s.Status = git("status", "--porcelain=v1", "--untracked-files=all", "--ignored")
		s.HeadRef = git("symbolic-ref", "-q", "HEAD")
		s.HeadReflog = git("reflog", "show", "--format=%H %gs", "HEAD")
		s.Reflog = git("reflog", "show", "--format=%H %gs", "refs/heads/"+name)
		admin := fixtures.AdminDir(t, path)
		_ = filepath.WalkDir(admin, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(admin, p)
			switch rel {
			case "index", "gitdir", "ORIG_HEAD", "logs/HEAD":
				return nil // compared above, or holds the path
			}
			b, _ := os.ReadFile(p)
			// A reflog's entries carry the second they were written: the
			// two adds need not run in the same one.
			b = reflogTime.ReplaceAll(b, []byte("> TIME\t"))
			s.AdminFiles = append(s.AdminFiles, rel+": "+norm(string(b)))
			return nil
		})
		sort.Strings(s.AdminFiles)
	}
	if b, err := os.ReadFile(hookLog); err == nil {
		s.Hook = norm(string(b))
		os.Remove(hookLog)
	}
	return s
}

// stripStatLines drops the stat data of `ls-files --debug` (times,
// inode, device differ between any two checkouts) and keeps the flags.
func stripStatLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		tl := strings.TrimSpace(l)
		if strings.HasPrefix(tl, "ctime:") || strings.HasPrefix(tl, "mtime:") || strings.HasPrefix(tl, "dev:") || strings.HasPrefix(tl, "uid:") || strings.HasPrefix(tl, "size:") {
			if strings.HasPrefix(tl, "size:") {
				if _, flags, ok := strings.Cut(tl, "flags:"); ok {
					out = append(out, "  flags:"+flags)
				}
			}
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// runGitIn runs git in dir as a person would (no GIT_ variables but the
// isolation's), for the comparison only.
func runGitIn(dir string, args ...string) (string, error) {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, plain: true}, args...)
	return string(res.Stdout), err
}

// addBothWays adds a worktree with git's one command (name "plainwt")
// and with the steps (name "stepswt"), from dir, at the commit, and
// returns both states. setup runs before each add.
func addBothWays(t *testing.T, dir, commit, parent, hookLog string) (plain, steps fullAddState) {
	t.Helper()
	common := dir
	p1 := filepath.Join(parent, "plainwt")
	threshold := 1 << 30
	err := AddWorktree(ctx, dir, AddOptions{Path: p1, Branch: "plainwt", Commit: commit, LockReason: "reason", StepsThreshold: threshold})
	plain = captureAdd(t, common, p1, "plainwt", hookLog, err)
	threshold = 1
	if !manyWorktrees(dir, commit, threshold) {
		t.Fatalf("the steps are not taken (git's add: %v)", err)
	}
	p2 := filepath.Join(parent, "stepswt")
	err = AddWorktree(ctx, dir, AddOptions{Path: p2, Branch: "stepswt", Commit: commit, LockReason: "reason", StepsThreshold: threshold})
	steps = captureAdd(t, common, p2, "stepswt", hookLog, err)
	return plain, steps
}

func diffAdds(t *testing.T, plain, steps fullAddState) {
	t.Helper()
	// The reflogs name commits; the worktrees differ in nothing else.
	if diff := cmp.Diff(plain, steps); diff != "" {
		t.Errorf("the steps differ from git worktree add (-git +steps):\n%s", diff)
	}
}

// stepsCase builds a repository in one state and returns the directory
// AddWorktree is called from and the commit.
type stepsCase struct {
	name  string
	setup func(t *testing.T, repo *fixtures.Repo, hookLog string) (dir, commit string)
}

func TestAddWorktreeStepsAttack(t *testing.T) {
	hook := func(repo *fixtures.Repo, hookLog string) {
		repo.WriteExecutable(".git/hooks/post-checkout", hookRecorder(hookLog))
	}
	files := func(repo *fixtures.Repo) string {
		repo.WriteFiles(map[string]string{"a.txt": "a\n", "d1/b.txt": "b\n", "d2/c.txt": "c\n"})
		repo.WriteExecutable("run.sh", "#!/bin/sh\n")
		repo.Symlink("a.txt", "link")
		return repo.Commit("files")
	}
	cases := []stepsCase{
		{"plain", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			return repo.CommonDir(), c
		}},
		{"core.worktree in the common config", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("core.worktree", repo.Dir)
			return repo.CommonDir(), c
		}},
		{"worktreeConfig with main's config.worktree", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.SetWorktreeConfig("user.name", "main only")
			return repo.CommonDir(), c
		}},
		{"sparse checkout in the main worktree", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Git("sparse-checkout", "set", "d1")
			return repo.CommonDir(), c
		}},
		{"non-cone sparse checkout in the common config", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("core.sparseCheckout", "true")
			repo.WriteFile(".git/info/sparse-checkout", "/d2/\n")
			repo.Git("read-tree", "-mu", "HEAD")
			return repo.CommonDir(), c
		}},
		{"absolute core.hooksPath", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hooks := filepath.Join(fixtures.TempDir(t), "hooks")
			os.MkdirAll(hooks, 0o755)
			os.WriteFile(filepath.Join(hooks, "post-checkout"), []byte(hookRecorder(log)), 0o755)
			repo.Config("core.hooksPath", hooks)
			return repo.CommonDir(), c
		}},
		{"relative core.hooksPath, committed", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			files(repo)
			repo.WriteExecutable(".githooks/post-checkout", hookRecorder(log))
			c := repo.Commit("hooks")
			repo.Config("core.hooksPath", ".githooks")
			return repo.CommonDir(), c
		}},
		{"hook not executable", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			repo.WriteFileMode(".git/hooks/post-checkout", hookRecorder(log), 0o644)
			return repo.CommonDir(), c
		}},
		{"hook without a #! line", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			repo.WriteExecutable(".git/hooks/post-checkout", strings.TrimPrefix(hookRecorder(log), "#!/bin/sh\n"))
			return repo.CommonDir(), c
		}},
		{"hook is a symbolic link", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			target := filepath.Join(fixtures.TempDir(t), "real-hook")
			os.WriteFile(target, []byte(hookRecorder(log)), 0o755)
			os.Symlink(target, filepath.Join(repo.CommonDir(), "hooks", "post-checkout"))
			return repo.CommonDir(), c
		}},
		{"core.logAllRefUpdates false", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("core.logAllRefUpdates", "false")
			return repo.CommonDir(), c
		}},
		{"core.logAllRefUpdates always", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("core.logAllRefUpdates", "always")
			return repo.CommonDir(), c
		}},
		{"submodule.recurse", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			files(repo)
			repo.AddSubmodule("sub", fixtures.NewRepo(t))
			hook(repo, log)
			repo.Config("submodule.recurse", "true")
			return repo.CommonDir(), repo.Head()
		}},
		{"branch.autoSetupMerge always", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("branch.autoSetupMerge", "always")
			return repo.CommonDir(), c
		}},
		{"failing hook", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			repo.WriteExecutable(".git/hooks/post-checkout", hookRecorder(log)+"exit 7\n")
			return repo.CommonDir(), c
		}},
		{"submodule in the base", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			files(repo)
			sub := fixtures.NewRepo(t)
			repo.AddSubmodule("sub", sub)
			hook(repo, log)
			return repo.CommonDir(), repo.Head()
		}},
		{"lfs-style filter and hook", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			repo.WriteFile(".gitattributes", "*.bin filter=fake\n")
			repo.Config("filter.fake.clean", "cat")
			repo.Config("filter.fake.smudge", "sed s/x/y/")
			repo.WriteFile("f.bin", "xxx\n")
			c := repo.Commit("filtered")
			hook(repo, log)
			return repo.CommonDir(), c
		}},
		{"bare repository", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			bare := filepath.Join(fixtures.TempDir(t), "bare.git")
			repo.Git("clone", "--quiet", "--bare", repo.Dir, bare)
			os.WriteFile(filepath.Join(bare, "hooks", "post-checkout"), []byte(hookRecorder(log)), 0o755)
			return bare, c
		}},
		{"core.bare set in a non-bare repository", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			c := files(repo)
			hook(repo, log)
			repo.Config("core.bare", "true")
			return repo.CommonDir(), c
		}},
		{"sha256 repository", func(t *testing.T, _ *fixtures.Repo, log string) (string, string) {
			dir := filepath.Join(fixtures.TempDir(t), "sha256")
			fixtures.Git(t, fixtures.TempDir(t), "init", "--quiet", "--object-format=sha256", dir)
			repo := &fixtures.Repo{T: t, Dir: dir}
			c := files(repo)
			hook(repo, log)
			return repo.CommonDir(), c
		}},
		{"odd names in the base", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			for _, n := range fixtures.OddNames() {
				repo.WriteFile(n, n)
			}
			c := repo.Commit("odd")
			hook(repo, log)
			return repo.CommonDir(), c
		}},
		{"core.ignorecase true from another system", func(t *testing.T, repo *fixtures.Repo, log string) (string, string) {
			repo.WriteFiles(map[string]string{"A.txt": "upper\n", "a.txt": "lower\n"})
			c := repo.Commit("case")
			hook(repo, log)
			repo.Config("core.ignorecase", "true")
			return repo.CommonDir(), c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := fixtures.NewRepo(t)
			// A repository the hook runs git in: git's own add lets it.
			t.Setenv("OTHER_REPO", fixtures.NewRepo(t).Dir)
			log := filepath.Join(fixtures.TempDir(t), "hook.log")
			dir, commit := tc.setup(t, repo, log)
			parent := filepath.Join(fixtures.TempDir(t), "with space ünï")
			plain, steps := addBothWays(t, dir, commit, parent, log)
			diffAdds(t, plain, steps)
		})
	}
}

// The comparison in a real repository at the threshold, the threshold
// left as it is: git's add with one worktree fewer than defaultStepsThreshold,
// the steps with defaultStepsThreshold.
func TestAddWorktreeStepsAtRealThreshold(t *testing.T) {
	if testing.Short() {
		t.Skip("makes hundreds of worktrees")
	}
	repo := fixtures.NewRepo(t)
	t.Setenv("OTHER_REPO", fixtures.NewRepo(t).Dir)
	log := filepath.Join(fixtures.TempDir(t), "hook.log")
	repo.WriteFiles(map[string]string{"a.txt": "a\n", "d1/b.txt": "b\n"})
	repo.WriteExecutable("run.sh", "#!/bin/sh\n")
	repo.Symlink("a.txt", "link")
	commit := repo.Commit("files")
	repo.WriteExecutable(".git/hooks/post-checkout", hookRecorder(log))
	repo.AddWorktreeEntries(fixtures.TempDir(t), defaultStepsThreshold-1, commit)
	parent := filepath.Join(fixtures.TempDir(t), "with space ünï")
	p1 := filepath.Join(parent, "plainwt")
	if manyWorktrees(repo.CommonDir(), commit, 0) {
		t.Fatal("the steps are taken below the threshold")
	}
	err := AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: p1, Branch: "plainwt", Commit: commit, LockReason: "reason"})
	plain := captureAdd(t, repo.CommonDir(), p1, "plainwt", log, err)
	if !manyWorktrees(repo.CommonDir(), commit, 0) {
		t.Fatal("the steps are not taken at the threshold")
	}
	p2 := filepath.Join(parent, "stepswt")
	err = AddWorktree(ctx, repo.CommonDir(), AddOptions{Path: p2, Branch: "stepswt", Commit: commit, LockReason: "reason"})
	steps := captureAdd(t, repo.CommonDir(), p2, "stepswt", log, err)
	diffAdds(t, plain, steps)
	if plain.Hook == "" {
		t.Fatal("the hook did not run")
	}
}
