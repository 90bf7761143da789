package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/majlis-dev/majlis/internal/workers"
)

// SnapshotResult describes what Snapshot captured.
type SnapshotResult struct {
	// Clean is set when the worktree had nothing to capture: the snapshot
	// tree and the index's tree equal HEAD's tree, and the survey found
	// nothing else to keep (Survey.Empty). No commit is made then.
	Clean bool
	// Commit is the salvage commit (empty when Clean), laid out as Layout
	// says. Nothing refers to it yet: store it with UpdateRefCreate
	// before git gc can prune it.
	Commit string
	// Layout lists the salvage commit's parents and what each is.
	Layout SalvageLayout
	// Index, Untracked and Meta are the index commit, the stand-in for git
	// stash's untracked-files commit, and the meta commit (the worktree's
	// git-directory files); made even when Clean, then left unreferenced.
	Index, Untracked, Meta string
	// Survey is what the worktree held beyond its files: pinned commits,
	// per-worktree refs, an interrupted operation, hidden edits.
	Survey *Survey
	// Tree is the tree of the worktree's state, as `git add -A` would
	// stage it.
	Tree string
	// Parent is the HEAD commit the snapshot is based on; empty on an
	// unborn branch.
	Parent string
	// Files counts the paths whose snapshot differs from HEAD: Added
	// (untracked or newly staged files), Modified (content or mode),
	// Deleted, TypeChanged (such as a file replaced by a symlink).
	// Renames appear as a deletion and an addition.
	Files Counts
	// DirtySubmodules are submodules with changes of their own (modified
	// or untracked files inside them). The snapshot records each
	// submodule's checked-out commit, but not those changes.
	DirtySubmodules []string
	// NestedRepositories are repositories inside the worktree that HEAD
	// does not record: untracked nested repositories, and submodules added
	// since HEAD. The snapshot records each as a pointer to its checked-out
	// commit, not its files (if one has changes of its own, it is in
	// DirtySubmodules too).
	NestedRepositories []string
}

// Snapshot records everything a removal of the worktree whose top level
// is worktree would lose, except ignored files, as one salvage commit
// (see SalvageLayout), without changing anything the worktree's user can
// see: the index file, HEAD, the branch, the refs and the files are left
// byte-for-byte as they were. It does not store the commit under any ref;
// the caller does (UpdateRefCreate).
//
// The recipe: copy the worktree's index to a temporary index inside the
// worktree's own git directory (keeping its modification time, so that
// git re-reads the files whose stat data it cannot trust, as it would with
// the real index); clear the assume-unchanged and skip-worktree flags of
// the hidden files that differ from their entries; `git add -A --sparse`
// into it; then at once `git write-tree`, `git diff-index --cached HEAD`
// and a check of the submodules. Beside that run, at the same time: the
// index's own tree (`git write-tree` of a second copy), the meta tree of
// the git directory's files, and `git rev-list` for the commits only the
// worktree holds. A salvage commit is made only when something differs
// from HEAD or must be pinned. The temporary indexes are removed whatever
// happens. Ignore rules (.gitignore, info/exclude, core.excludesFile) are
// honoured because it is git that adds.
//
// What is not captured: ignored files; the contents of submodules and of
// nested repositories (reported in the result; reclaim keeps checked-out
// submodules' history separately).
//
// worktree must be the top level of a worktree (ErrNotTopLevel otherwise).
// A concurrent writer in the worktree is not stopped; what it writes while
// Snapshot runs may or may not be captured.
func Snapshot(ctx context.Context, worktree, message string) (SnapshotResult, error) {
	return snapshot(ctx, worktree, message, HeadState{})
}

// SnapshotKept is Snapshot of a kept trash folder whose HEAD majlis
// detached from a branch (DetachHead): while HEAD is still detached at
// the commit the branch was at then (from.Commit), the salvage names
// from.Branch as its branch, as a snapshot taken before the detach would
// have, so that a restore of it puts the workspace back on its branch.
func SnapshotKept(ctx context.Context, worktree, message string, from HeadState) (SnapshotResult, error) {
	return snapshot(ctx, worktree, message, from)
}

func snapshot(ctx context.Context, worktree, message string, from HeadState) (SnapshotResult, error) {
	sw, err := surveyWorktree(ctx, worktree, "snapshot")
	if err != nil {
		return SnapshotResult{}, err
	}
	r := &snapshotRun{ctx: ctx, surveyed: sw}
	defer r.removeTemps()
	if err := r.copyIndexes(); err != nil {
		return SnapshotResult{}, fmt.Errorf("gitops: snapshot of %s: %w", r.dir, err)
	}
	// The four chains share no field: each writes its own (see
	// snapshotRun), read only once all have returned.
	if err := workers.Concurrently(r.worktreeTree, r.indexCommit, r.metaCommit, r.placeholder); err != nil {
		return SnapshotResult{}, err
	}
	if err := r.settle(); err != nil {
		return SnapshotResult{}, err
	}
	result := r.result()
	if len(r.changes) == 0 && r.indexTree == r.tree && r.sv.Empty() && len(r.sv.refused) == 0 && len(r.sv.converted) == 0 {
		result.Clean = true
		return result, nil
	}
	if result.Commit, result.Layout, err = r.salvageCommit(message, from); err != nil {
		return SnapshotResult{}, err
	}
	return result, nil
}

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
	changes         []rawChange
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
	res, err := git(r.ctx, r.dir, cmdOpts{indexFile: r.tmpIndex, ceiling: r.ceiling}, "write-tree")
	if err != nil {
		return err
	}
	r.tree = strings.TrimSuffix(string(res.stdout), "\n")
	if !isObjectID(r.tree) {
		return unexpected("git write-tree", "%q is not an object id", r.tree)
	}
	return nil
}

// diff compares the private index with base (r.changes).
func (r *snapshotRun) diff(base string) func() error {
	return func() error {
		// --ignore-submodules=none: a submodule configured with
		// ignore=all still has its commit recorded, and a change of it
		// alone must not make the worktree look clean.
		res, err := git(r.ctx, r.dir, cmdOpts{readOnly: true, indexFile: r.tmpIndex, ceiling: r.ceiling},
			"diff-index", "--cached", "-z", "--no-renames", "--ignore-submodules=none", base)
		if err != nil {
			return err
		}
		r.changes, err = parseRawDiff(res.stdout)
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
	res, err := git(r.ctx, r.dir, cmdOpts{ceiling: r.ceiling, stdin: []byte{}}, "mktree")
	if err != nil {
		return err
	}
	empty := strings.TrimSuffix(string(res.stdout), "\n")
	if !isObjectID(empty) {
		return unexpected("git mktree", "%q is not an object id", empty)
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
		if c.Status != 'D' && (c.DstMode == ModeFile || c.DstMode == ModeExecutable) {
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
			if c.DstMode == ModeGitlink {
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
func (r *snapshotRun) salvageCommit(message string, from HeadState) (string, SalvageLayout, error) {
	layout := SalvageLayout{Version: SalvageVersion, Head: r.parent, Branch: r.sv.Branch, Index: r.index,
		Untracked: r.untracked, Meta: r.meta}
	if r.sv.Branch == "" && from.Branch != "" && r.parent != "" && r.parent == from.Commit {
		layout.Branch = from.Branch
	}
	seen := map[string]bool{r.parent: true}
	for _, p := range r.sv.Pins {
		if !seen[p.Commit] {
			seen[p.Commit] = true
			layout.Pins = append(layout.Pins, p)
		}
	}
	args := []string{"commit-tree", "--no-gpg-sign"}
	for _, p := range layout.Parents() {
		args = append(args, "-p", p)
	}
	args = append(args, "-m", layout.Message(message), r.tree)
	commit, err := commitTree(r.ctx, r.dir, r.ceiling, nil, args...)
	if err != nil {
		return "", SalvageLayout{}, err
	}
	return commit, layout, nil
}

// commitTree runs `git commit-tree ARGS` and returns the new commit. Where
// no user.name/user.email is configured (a CI machine, an agent's
// container) a salvage must not fail for that, or a reclaim could not
// proceed: the commit is majlis's own, and says so.
func commitTree(ctx context.Context, dir, ceiling string, env []string, args ...string) (string, error) {
	res, err := git(ctx, dir, cmdOpts{ceiling: ceiling, extraEnv: env}, args...)
	var ge *Error
	if err != nil && errors.As(err, &ge) && missingIdentity(ge.Stderr) {
		res, err = git(ctx, dir, cmdOpts{ceiling: ceiling, extraEnv: append(env, salvageIdentity...)}, args...)
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(res.stdout), "\n")
	if !isObjectID(id) {
		return "", unexpected("git commit-tree", "%q is not an object id", id)
	}
	return id, nil
}

// emptyTree is the id of the empty tree, for SHA-1 or SHA-256 ids of
// length n. git knows it without it being stored.
func emptyTree(n int) string {
	if n == 64 {
		return "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
	}
	return "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
}

// copyIndex copies gitDir/index to a new temporary file in gitDir and
// returns its name. The copy lives in the same directory as the index so
// that whatever the index refers to relative to its directory (a split
// index's shared index) is found. It keeps the index's modification time:
// git trusts a file's cached stat data only if the file was modified
// before the index was written ("racy git"), so a copy with a newer time
// would make git trust entries that it must re-read, and miss a change
// written in the same second as the index. If there is no index, the name
// is returned with no file, and git starts from an empty index.
func copyIndex(gitDir string) (string, error) {
	src := filepath.Join(gitDir, "index")
	data, err := os.ReadFile(src)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return "", err
	}
	f, err := os.CreateTemp(gitDir, "majlis-snapshot-*.index")
	if err != nil {
		return "", err
	}
	name := f.Name()
	if missing {
		f.Close()
		return name, os.Remove(name)
	}
	st, err := os.Stat(src)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(name, time.Time{}, st.ModTime())
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// dirtySubmodules returns the gitlinks in the index file index whose
// submodule has changes of its own. The gitlinks are found by reading the
// index in process; only they are handed to git diff-files, so git stats
// a handful of paths instead of the whole worktree. An index this code
// cannot read (a split index, say) makes git check every path instead.
func dirtySubmodules(ctx context.Context, dir, index, ceiling string, hashLen int) ([]string, error) {
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, err
	}
	links, err := indexGitlinks(data, hashLen)
	if err == nil && len(links) == 0 {
		return nil, nil
	}
	args := []string{"diff-files", "-z", "--ignore-submodules=none"}
	if err == nil {
		args = append(args, "--")
		args = append(args, links...)
	}
	res, err := git(ctx, dir, cmdOpts{readOnly: true, indexFile: index, ceiling: ceiling, literalPathspecs: true}, args...)
	if err != nil {
		return nil, err
	}
	changes, err := parseRawDiff(res.stdout)
	if err != nil {
		return nil, err
	}
	var dirty []string
	for _, c := range changes {
		if c.SrcMode == ModeGitlink && c.DstMode == ModeGitlink {
			dirty = append(dirty, c.Path)
		}
	}
	return dirty, nil
}

// head returns HEAD's commit id, or "" on an unborn branch. In process it
// reads the ref only: loading the object (and so a pack index) would cost
// more than the rest of a small snapshot, and commit-tree checks that the
// parent is a commit.
func (r *Reader) head(ctx context.Context) (string, error) {
	if r.repo != nil {
		r.mu.Lock()
		ref, err := r.repo.Reference(plumbing.HEAD, true)
		r.mu.Unlock()
		if err == nil && !ref.Hash().IsZero() {
			return ref.Hash().String(), nil
		}
	}
	id, err := resolveCLI(ctx, r.dir, r.tree, "HEAD")
	if err == nil || !errors.Is(err, ErrUnknownRevision) {
		return id, err
	}
	// HEAD names no commit: an unborn branch if HEAD is a symbolic ref,
	// else something is wrong and the snapshot must not pretend otherwise.
	if _, serr := git(ctx, r.dir, r.opts(cmdOpts{readOnly: true}), "symbolic-ref", "-q", "HEAD"); serr != nil {
		return "", err
	}
	return "", nil
}

// A rawChange is one entry of git's raw diff format (diff-tree,
// diff-files, diff-index with -z).
type rawChange struct {
	SrcMode, DstMode Mode
	SrcID, DstID     string
	// Status is the change letter: A, C, D, M, R, T, U or X. Copies and
	// renames (with a score) only appear when detection is on.
	Status byte
	Score  string // the digits after R or C
	Path   string
	// SrcPath is the source path of a copy or rename.
	SrcPath string
}

// parseRawDiff parses `git diff-* -z` raw output:
// ":<srcmode> <dstmode> <srcid> <dstid> <status>[score]\0<path>\0", with a
// second path after renames and copies.
func parseRawDiff(out []byte) ([]rawChange, error) {
	var changes []rawChange
	for len(out) > 0 {
		meta, rest, ok := cutNUL(out)
		if !ok || len(meta) < 2 || meta[0] != ':' {
			return nil, unexpected("git diff", "record %q", meta)
		}
		f := strings.Split(meta[1:], " ")
		if len(f) != 5 || f[4] == "" {
			return nil, unexpected("git diff", "record %q", meta)
		}
		var c rawChange
		var err error
		if c.SrcMode, err = parseMode(f[0]); err != nil {
			return nil, err
		}
		if c.DstMode, err = parseMode(f[1]); err != nil {
			return nil, err
		}
		if c.SrcID, err = parseID(f[2]); err != nil {
			return nil, err
		}
		if c.DstID, err = parseID(f[3]); err != nil {
			return nil, err
		}
		c.Status, c.Score = f[4][0], f[4][1:]
		twoPaths := false
		switch c.Status {
		case 'R', 'C':
			if _, err := parseScore(f[4]); err != nil {
				return nil, err
			}
			twoPaths = true
		case 'A', 'D', 'M', 'T', 'U', 'X':
			if c.Score != "" {
				return nil, unexpected("git diff", "status %q", f[4])
			}
		default:
			return nil, unexpected("git diff", "status %q", f[4])
		}
		path, rest, ok := cutNUL(rest)
		if !ok || path == "" {
			return nil, unexpected("git diff", "record %q without a path", meta)
		}
		c.Path = path
		if twoPaths {
			dst, r2, ok := cutNUL(rest)
			if !ok || dst == "" {
				return nil, unexpected("git diff", "record %q without its second path", meta)
			}
			c.SrcPath, c.Path, rest = path, dst, r2
		}
		changes = append(changes, c)
		out = rest
	}
	return changes, nil
}

// appendRawChange renders c as git does; the inverse of parseRawDiff.
func appendRawChange(b []byte, c rawChange) []byte {
	b = fmt.Appendf(b, ":%s %s %s %s %c%s", c.SrcMode, c.DstMode, c.SrcID, c.DstID, c.Status, c.Score)
	b = append(b, 0)
	if c.SrcPath != "" {
		b = append(append(b, c.SrcPath...), 0)
	}
	return append(append(b, c.Path...), 0)
}

// salvageIdentity signs salvage commits when the user has no identity.
var salvageIdentity = []string{
	"GIT_AUTHOR_NAME=majlis salvage", "GIT_AUTHOR_EMAIL=majlis@localhost",
	"GIT_COMMITTER_NAME=majlis salvage", "GIT_COMMITTER_EMAIL=majlis@localhost",
}

// missingIdentity recognises git refusing to commit without an identity.
func missingIdentity(stderr string) bool {
	return strings.Contains(stderr, "Please tell me who you are") ||
		strings.Contains(stderr, "empty ident name") || strings.Contains(stderr, "unable to auto-detect email address")
}
