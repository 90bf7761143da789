package salvage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// A TreeState is what a worktree holds, as trees, found without making a
// commit (see WorktreeTree).
type TreeState struct {
	Tree     string // the tree `git add -A` gives the worktree's files (ignored ones aside)
	Head     string // HEAD's commit; empty on an unborn branch
	HeadTree string // HEAD's tree; empty on an unborn branch
	OnBranch bool   // HEAD is a symbolic ref: its commits are on a branch
	// Outside counts the files Tree cannot hold, which a salvage keeps in
	// its meta commit: those in the folders of submodules that are not
	// checked out (Survey.Unpopulated), those whose names git refuses,
	// and those whose bytes a checkout would not give back (kept as they
	// are on disk beside the tree).
	Outside int
}

// WorktreeTree computes the tree of the worktree's files exactly as
// Snapshot does (hidden files made visible in a private copy of the index,
// then git add -A --sparse, then write-tree), HEAD's tree, and whether
// HEAD is on a branch, changing nothing and writing no commit: a caller
// that only needs to know whether anything changed since a snapshot
// leaves no unreferenced commit behind.
func WorktreeTree(ctx context.Context, worktree string) (TreeState, error) {
	sw, err := surveyWorktree(ctx, worktree, "tree")
	if err != nil {
		return TreeState{}, err
	}
	dir, ceiling, gitDir, parent, sv := sw.dir, sw.ceiling, sw.gitDir, sw.parent, sw.sv
	tmpIndex, err := copyIndex(gitDir)
	if err != nil {
		return TreeState{}, fmt.Errorf("salvage: tree of %s: %w", dir, err)
	}
	defer func() {
		os.Remove(tmpIndex)
		os.Remove(tmpIndex + ".lock")
	}()
	onTmp := gitops.Cmd{IndexFile: tmpIndex, Ceiling: ceiling}
	if err := sv.hashFlagged(ctx, dir, ceiling); err != nil {
		return TreeState{}, err
	}
	if err := sv.revealHidden(ctx, dir, ceiling, tmpIndex); err != nil {
		return TreeState{}, err
	}
	refused, err := sv.addAll(ctx, dir, ceiling, tmpIndex)
	if err != nil {
		return TreeState{}, err
	}
	if sv.mayConvert(func() bool { return indexHasAttributes(tmpIndex, sv.hashLen) }) {
		if sv.converted, err = sv.findConverted(ctx, dir, ceiling, tmpIndex); err != nil {
			return TreeState{}, err
		}
	}
	st := TreeState{Head: parent, Outside: len(sv.Unpopulated) + len(refused) + len(sv.converted)}
	res, err := gitops.Run(ctx, dir, onTmp, "write-tree")
	if err != nil {
		return TreeState{}, err
	}
	st.Tree = strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(st.Tree) {
		return TreeState{}, gitops.Unexpected("git write-tree", "%q is not an object id", st.Tree)
	}
	if parent != "" {
		res, err = gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, Ceiling: ceiling}, "rev-parse", "--verify", parent+"^{tree}")
		if err != nil {
			return TreeState{}, err
		}
		st.HeadTree = strings.TrimSuffix(string(res.Stdout), "\n")
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return TreeState{}, err
	}
	st.OnBranch = strings.HasPrefix(string(b), "ref: refs/heads/")
	return st, nil
}
