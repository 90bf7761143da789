package salvage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// The salvage of a worktree whose folder is gone (moved or deleted by
// hand) while git's administrative entry of it remains
// (<common dir>/worktrees/<id>). The entry alone still holds the
// worktree's HEAD (a commit made on a detached HEAD), its per-worktree
// refs (refs/worktree/*, refs/bisect/*), its index (staged blobs), its
// reflogs and an interrupted operation's state; dropping the entry makes
// those commits and blobs unreachable. Git is run on the entry itself
// (GIT_DIR = the entry, which names the common dir): only commands that
// read or write the index and objects, never the work tree, which git
// would otherwise take to be the current directory.

// An EntrySurvey is what a worktree's admin entry holds, its folder gone.
type EntrySurvey struct {
	*Survey
	// Staged counts the index's changes against HEAD (the empty tree when
	// HEAD is unborn): the versions only the index holds.
	Staged gitops.Counts
	// StagedPaths are the paths of those changes, sorted.
	StagedPaths []string
	// Modules lists the repositories of checked-out submodules kept in the
	// entry (modules/<name>, nested ones too), relative to the entry.
	Modules []string
}

// Clean reports whether the entry holds nothing a salvage must keep: HEAD
// on a branch (or detached at a commit a shared ref reaches), an index
// equal to HEAD's tree, no per-worktree ref, pin, operation or
// per-worktree setting, and no submodule repository.
func (e *EntrySurvey) Clean() bool {
	return e.Staged.Total() == 0 && e.Survey.Empty() && e.Conflicted == 0 && e.IntentToAdd == 0 && len(e.Modules) == 0
}

// entryOpts runs git on the admin entry gitDir, whose repository's common
// directory is commonDir ("": the one its commondir file names, or gitDir
// itself for a repository of its own). The common directory is named,
// not read from the entry: an entry moved aside (into majlis's trash)
// keeps a commondir file relative to where it was. Its work tree is named
// as the entry itself, which no command run here reads (they read and
// write the index and objects only): the entry's config may name the
// folder that is gone (core.worktree, a submodule's), where git would
// fail to go.
func entryOpts(gitDir, commonDir string) gitops.Cmd {
	o := gitops.Cmd{ReadOnly: true, GitDir: gitDir, WorkTree: gitDir}
	if commonDir != "" {
		o.Env = []string{"GIT_COMMON_DIR=" + commonDir}
	}
	return o
}

// SurveyEntry finds what the admin entry gitDir holds, changing nothing.
// commonDir is the repository's common directory ("" for a repository of
// its own, such as a submodule's kept in the entry). An entry whose HEAD,
// index or refs git cannot read is an error: the caller refuses rather
// than drop what it could not read.
func SurveyEntry(ctx context.Context, gitDir, commonDir string) (*EntrySurvey, error) {
	head, err := entryHead(ctx, gitDir, commonDir)
	if err != nil {
		return nil, err
	}
	sv, err := newSurvey(gitDir, head, nil)
	if err != nil {
		return nil, fmt.Errorf("salvage: reading %s: %w", filepath.Join(gitDir, "index"), err)
	}
	if commonDir != "" {
		sv.commonDir = filepath.Clean(commonDir)
	} else {
		sv.commonDir = gitDir
	}
	if err := sv.readGitDir(); err != nil {
		return nil, err
	}
	common := entryOpts(sv.commonDir, "")
	sv.commonOpts = &common
	if err := sv.findPins(ctx); err != nil {
		return nil, err
	}
	es := &EntrySurvey{Survey: sv}
	base := head
	if base == "" {
		base = emptyTree(2 * sv.hashLen)
	}
	// The index as git reads it (a damaged one fails here), against HEAD.
	res, err := gitops.Run(ctx, gitDir, entryOpts(gitDir, commonDir), "diff-index", "--cached", "-z", "--no-renames", "--ignore-submodules=none", base)
	if err != nil {
		return nil, err
	}
	changes, err := gitops.ParseRawDiff(res.Stdout)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		es.StagedPaths = append(es.StagedPaths, c.Path)
		switch c.Status {
		case 'A':
			es.Staged.Added++
		case 'D':
			es.Staged.Deleted++
		case 'T':
			es.Staged.TypeChanged++
		case 'U':
			es.Staged.Conflicted++
		default:
			es.Staged.Modified++
		}
	}
	es.Staged.Staged = len(changes)
	if es.Modules, err = entryModules(gitDir); err != nil {
		return nil, err
	}
	return es, nil
}

// entryHead returns the commit the entry's HEAD names, "" when it is an
// unborn branch; anything else (a HEAD git cannot read, an id that is not
// a commit) is an error.
func entryHead(ctx context.Context, gitDir, commonDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", fmt.Errorf("salvage: reading the HEAD of %s: %w", gitDir, err)
	}
	line := strings.TrimRight(string(b), "\n")
	ref, symbolic := strings.CutPrefix(line, "ref: ")
	switch {
	case symbolic && (!strings.HasPrefix(ref, "refs/") || CheckRefName(ref) != nil):
		return "", fmt.Errorf("salvage: the HEAD of %s names %q", gitDir, ref)
	case !symbolic && !gitops.IsObjectID(line):
		return "", fmt.Errorf("salvage: the HEAD of %s holds %q", gitDir, line)
	}
	id, err := gitops.ResolveCommitWith(ctx, gitDir, entryOpts(gitDir, commonDir), "HEAD")
	if errors.Is(err, gitops.ErrUnknownRevision) && symbolic {
		return "", nil // an unborn branch (or one deleted under the worktree)
	}
	if err != nil {
		return "", fmt.Errorf("salvage: the HEAD of %s: %w", gitDir, err)
	}
	return id, nil
}

// entryModules lists the submodule repositories under gitDir/modules: the
// folders holding HEAD, objects and refs, nested ones included.
func entryModules(gitDir string) ([]string, error) {
	root := filepath.Join(gitDir, "modules")
	var mods []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if isGitDir(p) {
			rel, _ := filepath.Rel(gitDir, p)
			mods = append(mods, filepath.ToSlash(rel))
		}
		switch d.Name() {
		case "objects", "refs", "logs", "hooks", "info":
			return filepath.SkipDir
		}
		return nil
	})
	return mods, err
}

func isGitDir(p string) bool {
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(p, n)); err != nil {
			return false
		}
	}
	return true
}

// SnapshotEntry salvages what the admin entry gitDir holds, its folder
// gone, as one salvage commit laid out as Snapshot's (Layout),
// without changing the entry: the salvage tree is the index's (the files
// are gone; what the index staged is the last known state of them), the
// index commit the same tree on HEAD, the meta commit the entry's files
// (the raw index, HEAD, refs, reflogs, operation state, per-worktree
// config), and the pins every commit only the entry holds. It does not
// store the commit under any ref, nor keep the submodule repositories
// (EntrySurvey.Modules): the caller does. A Clean entry gets no commit.
func SnapshotEntry(ctx context.Context, gitDir, commonDir, message string) (SnapshotResult, *EntrySurvey, error) {
	es, err := SurveyEntry(ctx, gitDir, commonDir)
	if err != nil {
		return SnapshotResult{}, nil, err
	}
	sv := es.Survey
	result := SnapshotResult{Parent: sv.Head, Survey: sv, Files: es.Staged}
	tmpIndex, err := copyIndex(gitDir)
	if err != nil {
		return SnapshotResult{}, nil, fmt.Errorf("salvage: salvage of %s: %w", gitDir, err)
	}
	metaIndex := tmpIndex + ".meta"
	defer func() {
		for _, t := range []string{tmpIndex, metaIndex} {
			os.Remove(t)
			os.Remove(t + ".lock")
		}
	}()
	o := entryOpts(gitDir, commonDir)
	o.ReadOnly = false
	tree, err := sv.indexTreeIn(ctx, gitDir, o, tmpIndex)
	if err != nil {
		return SnapshotResult{}, nil, err
	}
	result.Tree = tree
	args := []string{"commit-tree", "--no-gpg-sign"}
	if sv.Head != "" {
		args = append(args, "-p", sv.Head)
	}
	if result.Index, err = entryCommit(ctx, gitDir, commonDir, placeholderEnv, append(args, "-m", indexMessage, tree)...); err != nil {
		return SnapshotResult{}, nil, err
	}
	eo := entryOpts(gitDir, commonDir)
	eo.ReadOnly, eo.Stdin = false, []byte{}
	empty, err := gitops.Run(ctx, gitDir, eo, "mktree")
	if err != nil {
		return SnapshotResult{}, nil, err
	}
	if result.Untracked, err = entryCommit(ctx, gitDir, commonDir, placeholderEnv, "commit-tree", "--no-gpg-sign", "-m",
		placeholderMessage, strings.TrimSuffix(string(empty.Stdout), "\n")); err != nil {
		return SnapshotResult{}, nil, err
	}
	if es.Clean() {
		result.Clean = true
		return result, es, nil
	}
	if sv.needsMeta() {
		mt, err := sv.metaTree(ctx, metaIndex)
		if err != nil {
			return SnapshotResult{}, nil, err
		}
		if result.Meta, err = entryCommit(ctx, gitDir, commonDir, nil, "commit-tree", "--no-gpg-sign", "-m",
			"majlis salvage: the worktree's git directory (index, refs, reflogs, operation state)", mt); err != nil {
			return SnapshotResult{}, nil, err
		}
	}
	layout := Layout{Version: Version, Head: sv.Head, Branch: sv.Branch, Index: result.Index,
		Untracked: result.Untracked, Meta: result.Meta}
	layout.Pins = sv.salvagePins()
	if result.Commit, err = entryCommit(ctx, gitDir, commonDir, nil, layout.commitTreeArgs(message, tree)...); err != nil {
		return SnapshotResult{}, nil, err
	}
	result.Layout = layout
	return result, es, nil
}

// indexTreeIn is indexTree for git run with options o: the tree of the
// private index copy at index.
func (s *Survey) indexTreeIn(ctx context.Context, dir string, o gitops.Cmd, index string) (string, error) {
	o.IndexFile = index
	if len(s.stages) > 0 {
		var in strings.Builder
		zero := strings.Repeat("0", 2*s.hashLen)
		done := map[string]bool{}
		for _, e := range s.stages {
			if !done[e.Path] {
				done[e.Path] = true
				fmt.Fprintf(&in, "0 %s\t%s\x00", zero, e.Path)
			}
		}
		for _, e := range s.stages {
			if e.Stage == 2 {
				fmt.Fprintf(&in, "%s %s 0\t%s\x00", e.Mode, e.ID, e.Path)
			}
		}
		o.Stdin = []byte(in.String())
		if _, err := gitops.Run(ctx, dir, o, "update-index", "-z", "--index-info"); err != nil {
			return "", err
		}
		o.Stdin = nil
	}
	res, err := gitops.Run(ctx, dir, o, "write-tree")
	if err != nil {
		return "", err
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if !gitops.IsObjectID(id) {
		return "", gitops.Unexpected("git write-tree", "%q is not an object id", id)
	}
	return id, nil
}

// entryCommit is commitTree for git run on the admin entry gitDir.
func entryCommit(ctx context.Context, gitDir, commonDir string, env []string, args ...string) (string, error) {
	o := entryOpts(gitDir, commonDir)
	o.ReadOnly, o.Env = false, append(o.Env, env...)
	res, err := gitops.Run(ctx, gitDir, o, args...)
	var ge *gitops.Error
	if err != nil && errors.As(err, &ge) && missingIdentity(ge.Stderr) {
		o.Env = append(o.Env, salvageIdentity...)
		res, err = gitops.Run(ctx, gitDir, o, args...)
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

// EntryStashes returns the stash entries of the repository whose git
// directory is gitDir (a submodule's, kept in a worktree's entry), newest
// first, read from the stash's reflog.
func EntryStashes(gitDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "logs", "refs", "stash"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return gitops.ParseReflogNew(b)
}

// GitDirRefs returns the refs under prefixes of the repository whose git
// directory is src (a submodule's, kept in a worktree's entry whose folder
// is gone): full name -> object id.
func GitDirRefs(ctx context.Context, src string, prefixes ...string) (map[string]string, error) {
	res, err := gitops.Run(ctx, src, entryOpts(src, ""), append([]string{"for-each-ref", "--format=%(objectname) %(refname)"}, prefixes...)...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && gitops.IsObjectID(id) {
			refs[name] = id
		}
	}
	return refs, nil
}

// CopyFromGitDir copies into the repository whose common directory is
// commonDir the objects that the ids of refs (target ref -> object id)
// need from the repository whose git directory is src, and sets each
// target ref (replacing its value). src's config may name a work tree
// that is gone (a submodule's core.worktree), where a fetch's upload-pack
// would fail to go: the objects are packed in src, run on src alone, and
// the pack is written into commonDir's object store, as a fetch writes
// one.
func CopyFromGitDir(ctx context.Context, commonDir, src string, refs map[string]string) error {
	if len(refs) == 0 {
		return nil
	}
	var tips, updates strings.Builder
	seen := map[string]bool{}
	for name, id := range refs {
		if CheckRefName(name) != nil || !gitops.IsObjectID(id) {
			return fmt.Errorf("salvage: copying %s from %s: not a ref and an object id", name, src)
		}
		if !seen[id] {
			seen[id] = true
			tips.WriteString(id + "\n")
		}
		fmt.Fprintf(&updates, "update %s %s\n", name, id)
	}
	o := entryOpts(src, "")
	o.ReadOnly, o.Stdin = false, []byte(tips.String())
	if _, err := gitops.Run(ctx, src, o, "pack-objects", "--revs", "--quiet", filepath.Join(commonDir, "objects", "pack", "pack")); err != nil {
		return fmt.Errorf("salvage: keeping refs of %s: %w", src, err)
	}
	if _, err := gitops.Run(ctx, commonDir, gitops.Cmd{Stdin: []byte(updates.String())}, "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("salvage: keeping refs of %s: %w", src, err)
	}
	return nil
}

// onCommon returns the options of a read-only git command run in the
// common directory with stdin (SurveyEntry sets commonOpts).
func (s *Survey) onCommon(stdin []byte) gitops.Cmd {
	o := gitops.Cmd{}
	if s.commonOpts != nil {
		o = *s.commonOpts
	}
	o.ReadOnly, o.Stdin = true, stdin
	return o
}
