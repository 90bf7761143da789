package gitops

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// HasGitmodules reports whether commit's tree has a .gitmodules file at
// its top: a checkout of it declares submodules. It reads in process when
// it can (the commit and its top tree), and asks git otherwise.
func (r *Reader) HasGitmodules(ctx context.Context, commit string) (bool, error) {
	if !IsObjectID(commit) {
		return false, fmt.Errorf("gitops: %q is not a commit id", commit)
	}
	if r.repo != nil {
		if has, ok := r.gitmodulesInProcess(commit); ok {
			return has, nil
		}
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, LiteralPathspecs: true}),
		"ls-tree", "--name-only", "--end-of-options", commit, "--", ".gitmodules")
	if err != nil {
		return false, err
	}
	return len(res.Stdout) > 0, nil
}

// gitmodulesInProcess is HasGitmodules read with go-git; !ok when it
// could not read the commit or its tree (git then answers).
func (r *Reader) gitmodulesInProcess(commit string) (has, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return false, false
	}
	tree, err := c.Tree()
	if err != nil {
		return false, false
	}
	_, err = tree.FindEntry(".gitmodules")
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
		return false, true
	}
	return false, false
}
