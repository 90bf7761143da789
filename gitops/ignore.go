package gitops

import (
	"context"
	"errors"
	"strings"
)

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
	dir, o, err := OpenTree(worktree)
	if err != nil {
		return false, err
	}
	// check-ignore refuses the literal pathspec magic; a leading ":" would
	// be read as magic, so such a path is made to start with "./".
	if strings.HasPrefix(relpath, ":") {
		relpath = "./" + relpath
	}
	o.ReadOnly, o.OKCodes = true, []int{1}
	res, err := Run(ctx, dir, o,
		"check-ignore", "-q", "--", relpath)
	if err != nil {
		return false, err
	}
	return res.Code == 0, nil
}
