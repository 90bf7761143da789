package salvage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// Files git never lists and files whose names it refuses.
//
// git skips every entry named .git when it lists a worktree's files: a
// folder named .git that is no repository (sub/.git/notes.txt), or a file
// named .git that is no link to one, is neither tracked, untracked nor
// ignored, and `git add -A` passes it by. A salvage keeps such files
// beside the tree, as the files whose names git refuses (refused.go):
// under majlis/refused/<n> in the meta commit, listed in
// majlis/refused-files. An entry named .git that is, or may be, a
// repository (a folder with HEAD, objects, refs, commondir or gitdir; a
// file that begins "gitdir:") is a nested repository instead, which the
// reclaim's peer check refuses.

// repoMarkers are the names whose presence in a folder named .git makes
// it, or could make it, a git directory (git's is_git_directory wants
// HEAD, objects and refs, or commondir; a worktree's entry has gitdir).
var repoMarkers = []string{"HEAD", "objects", "refs", "commondir", "gitdir"}

// DotGitIsRepository reports whether the entry named .git at p is, or may
// be, a repository or a link to one. Anything that cannot be read is
// taken for one: the caller then leaves it alone and refuses.
func DotGitIsRepository(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return true
	}
	switch {
	case fi.IsDir():
		for _, m := range repoMarkers {
			if _, err := os.Lstat(filepath.Join(p, m)); !errors.Is(err, fs.ErrNotExist) {
				return true
			}
		}
		return false
	case fi.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			return true
		}
		defer f.Close()
		head := make([]byte, 8)
		n, _ := f.Read(head)
		return bytes.HasPrefix(bytes.ToLower(head[:n]), []byte("gitdir:"))
	}
	return true // a symbolic link or a special file named .git
}

// dotGitFiles walks the worktree whose top level is dir (following no
// symbolic link) for entries named .git below its top that are no
// repository, and returns the files under each (and each such file named
// .git), sorted. It does not look inside a folder holding a repository's
// .git: that folder is a nested repository, or a submodule.
func dotGitFiles(dir string) ([]unpopulatedFile, error) {
	var out []unpopulatedFile
	var walk func(rel string, inside bool) error
	walk = func(rel string, inside bool) error {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if !inside && rel != "" {
			for _, e := range entries {
				if e.Name() == ".git" && DotGitIsRepository(filepath.Join(dir, filepath.FromSlash(rel), ".git")) {
					return nil // a nested repository or a submodule
				}
			}
		}
		for _, e := range entries {
			child := path.Join(rel, e.Name())
			in := inside || e.Name() == ".git"
			switch {
			case rel == "" && e.Name() == ".git":
				continue // the worktree's own
			case e.Name() == ".git" && !inside && DotGitIsRepository(filepath.Join(dir, filepath.FromSlash(child))):
				continue
			case e.IsDir():
				if err := walk(child, in); err != nil {
					return err
				}
			case in && (e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0):
				fi, err := e.Info()
				if err != nil {
					return err
				}
				mode := execBit(fi)
				if e.Type()&fs.ModeSymlink != 0 {
					mode = gitops.ModeSymlink
				}
				out = append(out, unpopulatedFile{child, mode})
			}
		}
		return nil
	}
	if err := walk("", false); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// DotGitFiles returns how many files lie under entries named .git that are
// no repository in the worktree whose top level is worktree (git never
// lists them; a salvage keeps them), and the first max of their paths.
func DotGitFiles(worktree string, max int) (int, []string, error) {
	dir, _, err := gitops.TopLevel(worktree)
	if err != nil {
		return 0, nil, err
	}
	files, err := dotGitFiles(dir)
	if err != nil {
		return 0, nil, err
	}
	paths := []string{}
	for _, f := range files {
		if len(paths) < max {
			paths = append(paths, f.path)
		}
	}
	return len(files), paths, nil
}

// mayBeRefused reports whether git could refuse to put p in an index: a
// component that begins, in any case, with ".git" or "git~" (NTFS would
// take ".git.", ".git " and "GIT~1" for .git; protectNTFS is on by
// default), or holds a backslash or a colon. It lets through a superset
// of what git refuses: RefusedNames asks git about those only.
func mayBeRefused(p string) bool {
	for _, c := range strings.Split(p, "/") {
		l := strings.ToLower(c)
		if strings.HasPrefix(l, ".git") || strings.HasPrefix(l, "git~") || strings.ContainsAny(c, "\\:") {
			return true
		}
	}
	return false
}

// RefusedNames returns those of the untracked files untracked (paths in
// the worktree whose top level is worktree) whose names git refuses to
// put in an index, which a salvage keeps beside its tree. git is asked
// (`git add --intent-to-add`, which writes no object, into a private
// index removed afterwards) only about the paths that could be refused.
func RefusedNames(ctx context.Context, worktree string, untracked []string) ([]string, error) {
	var cands []string
	for _, p := range untracked {
		if mayBeRefused(p) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return []string{}, nil
	}
	dir, ceiling, err := gitops.TopLevel(worktree)
	if err != nil {
		return nil, err
	}
	gitDir, err := gitops.WorktreeGitDir(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(gitDir, "majlis-refused-*.index")
	if err != nil {
		return nil, err
	}
	index := f.Name()
	f.Close()
	os.Remove(index) // git starts from an empty index
	defer func() { os.Remove(index); os.Remove(index + ".lock") }()
	o := gitops.Cmd{IndexFile: index, Ceiling: ceiling, LiteralPathspecs: true,
		Stdin: []byte(strings.Join(cands, "\x00") + "\x00")}
	_, aerr := gitops.Run(ctx, dir, o, "-c", "advice.addEmbeddedRepo=false", "-c", "advice.updateSparsePath=false",
		"add", "--intent-to-add", "--ignore-errors", "--force", "--sparse", "--pathspec-from-file=-", "--pathspec-file-nul")
	var ge *gitops.Error
	if aerr != nil && !(errors.As(aerr, &ge) && strings.Contains(ge.Stderr, "invalid path '")) {
		return nil, aerr
	}
	o.Stdin = nil
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling}, "ls-files", "-z")
	if err != nil {
		return nil, err
	}
	added := map[string]bool{}
	for _, p := range strings.Split(strings.TrimSuffix(string(res.Stdout), "\x00"), "\x00") {
		added[p] = true
	}
	refused := []string{}
	for _, p := range cands {
		if !added[p] {
			refused = append(refused, p)
		}
	}
	return refused, nil
}
