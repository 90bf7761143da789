package gitops

import (
	"context"
	"errors"
	"strings"
)

// The functions in this file destroy files. They do no safety checks of
// their own beyond refusing a directory that is not the top level of a
// worktree (git would otherwise walk up and act on an enclosing
// repository, such as the main checkout). Callers establish authority,
// salvage and recheck peers first; see docs/design.md, "Safety rules".

// ResetHard resets the index and tracked files of the worktree whose top
// level is worktree to its HEAD (`git reset --hard`). Untracked and
// ignored files are left alone. Submodules are not recursed into, whatever
// submodule.recurse says: their changes are not the caller's to drop.
func ResetHard(ctx context.Context, worktree string) error {
	dir, o, err := openTree(worktree)
	if err != nil {
		return err
	}
	_, err = git(ctx, dir, o, "reset", "--hard", "--quiet", "--no-recurse-submodules")
	return err
}

// CleanOptions tune CleanUntracked.
type CleanOptions struct {
	// Ignored also deletes ignored files (git clean -x). Ignored files are
	// often someone's build output or local configuration; ask for this
	// only when they are known to be disposable.
	Ignored bool
}

// CleanUntracked deletes the untracked files and directories of the
// worktree whose top level is worktree (`git clean -f -d`). Ignored files
// are kept unless opts.Ignored. Nested repositories (untracked directories
// with their own .git) are never deleted: that would take git clean -ff.
func CleanUntracked(ctx context.Context, worktree string, opts CleanOptions) error {
	dir, o, err := openTree(worktree)
	if err != nil {
		return err
	}
	args := []string{"clean", "-f", "-d", "--quiet"}
	if opts.Ignored {
		args = append(args, "-x")
	}
	_, err = git(ctx, dir, o, args...)
	return err
}

// CheckIgnore reports whether relpath (relative to the top level
// worktree, or absolute inside it) is ignored by that worktree's rules:
// .gitignore files, info/exclude and core.excludesFile
// (`git check-ignore -q`). A tracked path is never ignored. A
// directory-only pattern ("build/") matches only a path that exists as a
// directory.
func CheckIgnore(ctx context.Context, worktree, relpath string) (bool, error) {
	if relpath == "" {
		return false, errors.New("gitops: CheckIgnore needs a path")
	}
	dir, o, err := openTree(worktree)
	if err != nil {
		return false, err
	}
	// check-ignore refuses the literal pathspec magic; a leading ":" would
	// be read as magic, so such a path is made to start with "./".
	if strings.HasPrefix(relpath, ":") {
		relpath = "./" + relpath
	}
	o.readOnly, o.okCodes = true, []int{1}
	res, err := git(ctx, dir, o,
		"check-ignore", "-q", "--", relpath)
	if err != nil {
		return false, err
	}
	return res.code == 0, nil
}

// Unhide clears the assume-unchanged and skip-worktree flags of files in
// the index of the worktree whose top level is worktree, so that a reset
// that follows puts them back to HEAD instead of refusing ("not
// uptodate"). Only the index's flags change; the caller has salvaged the
// files' edits first.
func Unhide(ctx context.Context, worktree string, files []HiddenFile) error {
	dir, ceiling, err := topLevel(worktree)
	if err != nil {
		return err
	}
	byFlag := map[string][]string{}
	for _, f := range files {
		byFlag["--no-"+f.Flag] = append(byFlag["--no-"+f.Flag], f.Path)
	}
	for _, flag := range []string{"--no-assume-unchanged", "--no-skip-worktree"} {
		if paths := byFlag[flag]; len(paths) > 0 {
			in := strings.Join(paths, "\x00") + "\x00"
			if _, err := git(ctx, dir, cmdOpts{ceiling: ceiling, stdin: []byte(in)}, "update-index", flag, "-z", "--stdin"); err != nil {
				return err
			}
		}
	}
	return nil
}
