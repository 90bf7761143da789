package salvage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/workers"
)

// SnapshotResult describes what Snapshot captured.
type SnapshotResult struct {
	// Clean is set when the worktree had nothing to capture: the snapshot
	// tree and the index's tree equal HEAD's tree, and the survey found
	// nothing else to keep (Survey.Empty). No commit is made then.
	Clean bool
	// Commit is the salvage commit (empty when Clean), laid out as Layout
	// says. Nothing refers to it yet: store it with gitops.UpdateRefCreate
	// before git gc can prune it.
	Commit string
	// Layout lists the salvage commit's parents and what each is.
	Layout Layout
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
	Files gitops.Counts
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
// (see Layout), without changing anything the worktree's user can
// see: the index file, HEAD, the branch, the refs and the files are left
// byte-for-byte as they were. It does not store the commit under any ref;
// the caller does (gitops.UpdateRefCreate).
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
// worktree must be the top level of a worktree (gitops.ErrNotTopLevel otherwise).
// A concurrent writer in the worktree is not stopped; what it writes while
// Snapshot runs may or may not be captured.
func Snapshot(ctx context.Context, worktree, message string) (SnapshotResult, error) {
	return snapshot(ctx, worktree, message, gitops.HeadState{})
}

// SnapshotKept is Snapshot of a kept trash folder whose HEAD majlis
// detached from a branch (gitops.DetachHead): while HEAD is still detached at
// the commit the branch was at then (from.Commit), the salvage names
// from.Branch as its branch, as a snapshot taken before the detach would
// have, so that a restore of it puts the workspace back on its branch.
func SnapshotKept(ctx context.Context, worktree, message string, from gitops.HeadState) (SnapshotResult, error) {
	return snapshot(ctx, worktree, message, from)
}

func snapshot(ctx context.Context, worktree, message string, from gitops.HeadState) (SnapshotResult, error) {
	sw, err := surveyWorktree(ctx, worktree, "snapshot")
	if err != nil {
		return SnapshotResult{}, err
	}
	r := &snapshotRun{ctx: ctx, surveyed: sw}
	defer r.removeTemps()
	if err := r.copyIndexes(); err != nil {
		return SnapshotResult{}, fmt.Errorf("salvage: snapshot of %s: %w", r.dir, err)
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

// commitTree runs `git commit-tree ARGS` and returns the new commit. Where
// no user.name/user.email is configured (a CI machine, an agent's
// container) a salvage must not fail for that, or a reclaim could not
// proceed: the commit is majlis's own, and says so.
func commitTree(ctx context.Context, dir, ceiling string, env []string, args ...string) (string, error) {
	res, err := gitops.Run(ctx, dir, gitops.Cmd{Ceiling: ceiling, Env: env}, args...)
	var ge *gitops.Error
	if err != nil && errors.As(err, &ge) && missingIdentity(ge.Stderr) {
		res, err = gitops.Run(ctx, dir, gitops.Cmd{Ceiling: ceiling, Env: append(env, salvageIdentity...)}, args...)
	}
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(id) {
		return "", gitops.Unexpected("git commit-tree", "%q is not an object id", id)
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
	links, err := gitops.IndexGitlinks(data, hashLen)
	if err == nil && len(links) == 0 {
		return nil, nil
	}
	args := []string{"diff-files", "-z", "--ignore-submodules=none"}
	if err == nil {
		args = append(args, "--")
		args = append(args, links...)
	}
	res, err := gitops.Run(ctx, dir, gitops.Cmd{ReadOnly: true, IndexFile: index, Ceiling: ceiling, LiteralPathspecs: true}, args...)
	if err != nil {
		return nil, err
	}
	changes, err := gitops.ParseRawDiff(res.Stdout)
	if err != nil {
		return nil, err
	}
	var dirty []string
	for _, c := range changes {
		if c.SrcMode == gitops.ModeGitlink && c.DstMode == gitops.ModeGitlink {
			dirty = append(dirty, c.Path)
		}
	}
	return dirty, nil
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
