package salvage

import (
	"context"
	"os"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
)

// A snapshotRun is one Snapshot in progress. Its four chains run at once
// (worktreeTree, indexCommit, metaCommit, placeholder), and so do the
// steps of worktreeTree after its add; each step writes only the fields
// listed as its own below, and reads the others' only after they have
// returned. The survey (sv) is read by all while they run and written
// only before and after them (settle).
type snapshotRun struct {
	ctx context.Context
	surveyed
	// The private indexes, each removed whatever happens (removeTemps):
	// the worktree's state (git add -A), the index as it is (its tree),
	// and the git directory's files (the meta tree).
	tmpIndex, indexCopy, metaIndex string
	temps                          []string

	// worktreeTree's, before its steps run at once: the files git will
	// not add (addAll).
	refused []unpopulatedFile
	// worktreeTree's steps': writeTree's tree, diff's changes,
	// submodules' dirty submodules, findConverted's files whose bytes a
	// checkout would not give back (and convertedDone, that they were
	// looked for).
	tree            string
	changes         []gitops.RawChange
	dirtySubmodules []string
	converted       []unpopulatedFile
	convertedDone   bool
	// indexCommit's: the index's tree and the index commit.
	indexTree, index string
	// metaCommit's (and settle's, after it): the meta commit.
	meta string
	// placeholder's: the stand-in for git stash's untracked-files commit.
	untracked string
}

// copyIndexes makes the private indexes. The index's own tree needs a
// second copy only when the index's cache-tree does not already name it.
func (r *snapshotRun) copyIndexes() error {
	var err error
	if r.tmpIndex, err = copyIndex(r.gitDir); err != nil {
		return err
	}
	r.temps = append(r.temps, r.tmpIndex)
	r.indexCopy = r.tmpIndex + ".index"
	if r.sv.cacheTree == "" {
		if r.indexCopy, err = copyIndex(r.gitDir); err != nil {
			return err
		}
		r.temps = append(r.temps, r.indexCopy)
	}
	r.metaIndex = r.tmpIndex + ".meta"
	r.temps = append(r.temps, r.metaIndex)
	return nil
}

func (r *snapshotRun) removeTemps() {
	for _, t := range r.temps {
		os.Remove(t)
		os.Remove(t + ".lock")
	}
}

// worktreeTree makes the worktree's tree: hidden files made visible in
// the private index, then git add -A --sparse (files outside a sparse
// checkout's cone are added too, and skip-worktree entries that are
// absent stay as they are), then at once `git write-tree`, `git
// diff-index --cached HEAD` (no difference: the tree is HEAD's) and a
// check of the submodules. Those three each read the private index and
// nothing else writes it (write-tree replaces it atomically, with the
// same entries), so they run at once. An unborn branch is rare and needs
// the tree's id length to name the empty tree, so it runs them in turn.
func (r *snapshotRun) worktreeTree() error {
	ctx, sv := r.ctx, r.sv
	if err := sv.hashFlagged(ctx, r.dir, r.ceiling); err != nil {
		return err
	}
	if err := sv.revealHidden(ctx, r.dir, r.ceiling, r.tmpIndex); err != nil {
		return err
	}
	var err error
	if r.refused, err = sv.addAll(ctx, r.dir, r.ceiling, r.tmpIndex); err != nil {
		return err
	}
	if r.parent != "" {
		return workers.Concurrently(r.writeTree, r.diff(r.parent), r.submodules(len(r.parent)/2), r.findConverted)
	}
	if err := r.writeTree(); err != nil {
		return err
	}
	return workers.Concurrently(r.diff(emptyTree(len(r.tree))), r.submodules(len(r.tree)/2), r.findConverted)
}

// writeTree writes the private index's tree (r.tree).
func (r *snapshotRun) writeTree() error {
	res, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{IndexFile: r.tmpIndex, Ceiling: r.ceiling}, "write-tree")
	if err != nil {
		return err
	}
	r.tree = strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(r.tree) {
		return gitops.Unexpected("git write-tree", "%q is not an object id", r.tree)
	}
	return nil
}

// diff compares the private index with base (r.changes).
func (r *snapshotRun) diff(base string) func() error {
	return func() error {
		// --ignore-submodules=none: a submodule configured with
		// ignore=all still has its commit recorded, and a change of it
		// alone must not make the worktree look clean.
		res, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{ReadOnly: true, IndexFile: r.tmpIndex, Ceiling: r.ceiling},
			"diff-index", "--cached", "-z", "--no-renames", "--ignore-submodules=none", base)
		if err != nil {
			return err
		}
		r.changes, err = gitops.ParseRawDiff(res.Stdout)
		return err
	}
}

// submodules finds the submodules with changes of their own
// (r.dirtySubmodules).
func (r *snapshotRun) submodules(hashLen int) func() error {
	return func() error {
		var err error
		r.dirtySubmodules, err = dirtySubmodules(r.ctx, r.dir, r.tmpIndex, r.ceiling, hashLen)
		return err
	}
}

// findConverted finds the files whose bytes a checkout would not give
// back (converted.go; r.converted), only where git may convert files at
// all, beside the rest (the private index is only read meanwhile). A
// .gitattributes among the files added is seen in the changes, by
// settle.
func (r *snapshotRun) findConverted() error {
	if !r.sv.mayConvert(func() bool { return false }) {
		return nil
	}
	r.convertedDone = true
	var err error
	r.converted, err = r.sv.findConverted(r.ctx, r.dir, r.ceiling, r.tmpIndex)
	return err
}

// indexCommit makes the index commit, as git stash makes it: the index's
// tree on HEAD. It is signed and dated as the stand-in is, so that it is
// named by its tree and HEAD alone: the same index on the same HEAD is
// the same commit, made once (the salvage commit carries the date and
// who).
func (r *snapshotRun) indexCommit() error {
	var err error
	if r.indexTree = r.sv.cacheTree; r.indexTree == "" {
		if r.indexTree, err = r.sv.indexTree(r.ctx, r.dir, r.ceiling, r.indexCopy); err != nil {
			return err
		}
	}
	if r.parent != "" && len(r.indexTree) == len(r.parent) {
		if id := indexCommitID(r.indexTree, r.parent); objectStored(r.sv.commonDir, id) {
			r.index = id
			return nil
		}
	}
	args := []string{"commit-tree", "--no-gpg-sign"}
	if r.parent != "" {
		args = append(args, "-p", r.parent)
	}
	r.index, err = commitTree(r.ctx, r.dir, r.ceiling, placeholderEnv, append(args, "-m", indexMessage, r.indexTree)...)
	return err
}

// metaCommit finds the pins, then makes the meta commit, which some pins
// need (those found in a reflog or a state file only the meta commit
// keeps).
func (r *snapshotRun) metaCommit() error {
	if err := r.sv.readGitDir(); err != nil {
		return err
	}
	if err := r.sv.findPins(r.ctx); err != nil {
		return err
	}
	if !r.sv.needsMeta() {
		return nil
	}
	return r.makeMeta()
}

// makeMeta makes the meta commit of the git directory's files (r.meta).
func (r *snapshotRun) makeMeta() error {
	tree, err := r.sv.metaTree(r.ctx, r.metaIndex)
	if err != nil {
		return err
	}
	r.meta, err = commitTree(r.ctx, r.dir, r.ceiling, nil, "commit-tree", "--no-gpg-sign", "-m",
		"majlis salvage: the worktree's git directory (index, refs, reflogs, operation state)", tree)
	return err
}

// placeholder makes the stand-in for git stash's untracked-files commit
// (r.untracked). It is the same commit every time: once stored, it is not
// made again.
func (r *snapshotRun) placeholder() error {
	if r.parent != "" {
		if id := placeholderID(len(r.parent)); objectStored(r.sv.commonDir, id) {
			r.untracked = id
			return nil
		}
	}
	// git knows the empty tree without storing it, but fsck and a fetch
	// of the salvage want it stored: mktree stores it.
	res, err := gitops.Run(r.ctx, r.dir, gitops.Cmd{Ceiling: r.ceiling, Stdin: []byte{}}, "mktree")
	if err != nil {
		return err
	}
	empty := strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(empty) {
		return gitops.Unexpected("git mktree", "%q is not an object id", empty)
	}
	r.untracked, err = commitTree(r.ctx, r.dir, r.ceiling, placeholderEnv, "commit-tree", "--no-gpg-sign", "-m",
		placeholderMessage, empty)
	return err
}

// settle runs once the chains are done: it looks for converted files
// when a .gitattributes was added, puts the refused and converted files
// into the survey, and makes the meta commit again when files kept that
// others may not read, refused or converted files need it (private.go).
func (r *snapshotRun) settle() error {
	sv := r.sv
	if !r.convertedDone && changesAddAttributes(r.changes) {
		var err error
		if r.converted, err = sv.findConverted(r.ctx, r.dir, r.ceiling, r.tmpIndex); err != nil {
			return err
		}
	}
	sv.converted = r.converted
	// The files kept that others may not read: their permissions go into
	// the meta commit. Only the files the salvage carries are looked at.
	var kept []string
	changed := map[string]bool{}
	for _, c := range r.changes {
		if c.Status != 'D' && (c.DstMode == gitops.ModeFile || c.DstMode == gitops.ModeExecutable) {
			kept = append(kept, c.Path)
			changed[c.Path] = true
		}
	}
	for _, f := range sv.converted {
		if !changed[f.path] {
			kept = append(kept, f.path)
		}
	}
	kept = append(kept, sv.Unpopulated...)
	sv.refused = r.refused
	for _, f := range r.refused {
		kept = append(kept, f.path)
	}
	if sv.findPrivate(r.dir, kept); len(sv.private) > 0 || len(sv.refused) > 0 || len(sv.converted) > 0 {
		os.Remove(r.metaIndex)
		return r.makeMeta()
	}
	return nil
}

// result is what the run found, without the salvage commit.
func (r *snapshotRun) result() SnapshotResult {
	res := SnapshotResult{Parent: r.parent, Survey: r.sv, Tree: r.tree, DirtySubmodules: r.dirtySubmodules,
		Index: r.index, Untracked: r.untracked, Meta: r.meta}
	for _, c := range r.changes {
		switch c.Status {
		case 'A':
			res.Files.Added++
			if c.DstMode == gitops.ModeGitlink {
				res.NestedRepositories = append(res.NestedRepositories, c.Path)
			}
		case 'D':
			res.Files.Deleted++
		case 'T':
			res.Files.TypeChanged++
		default:
			res.Files.Modified++
		}
	}
	return res
}

// salvageCommit makes the salvage commit and its layout. A kept trash
// detached from a branch (from) names that branch while HEAD is still at
// the commit the branch was at.
func (r *snapshotRun) salvageCommit(message string, from gitops.HeadState) (string, Layout, error) {
	layout := Layout{Version: Version, Head: r.parent, Branch: r.sv.Branch, Index: r.index,
		Untracked: r.untracked, Meta: r.meta}
	if r.sv.Branch == "" && from.Branch != "" && r.parent != "" && r.parent == from.Commit {
		layout.Branch = from.Branch
	}
	layout.Pins = r.sv.salvagePins()
	commit, err := commitTree(r.ctx, r.dir, r.ceiling, nil, layout.commitTreeArgs(message, r.tree)...)
	if err != nil {
		return "", Layout{}, err
	}
	return commit, layout, nil
}

// salvagePins are the commits the survey found pinned, each once, HEAD
// left out: the salvage commit's pin parents.
func (s *Survey) salvagePins() []gitops.Pin {
	var pins []gitops.Pin
	seen := map[string]bool{s.Head: true}
	for _, p := range s.Pins {
		if !seen[p.Commit] {
			seen[p.Commit] = true
			pins = append(pins, p)
		}
	}
	return pins
}

// commitTreeArgs are the arguments of the `git commit-tree` that makes
// the salvage commit of tree with layout l and message.
func (l Layout) commitTreeArgs(message, tree string) []string {
	args := []string{"commit-tree", "--no-gpg-sign"}
	for _, p := range l.Parents() {
		args = append(args, "-p", p)
	}
	return append(args, "-m", l.Message(message), tree)
}
