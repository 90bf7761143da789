package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/majlis-dev/majlis/internal/workers"
)

// WorktreeHead returns the commit checked out in the worktree whose top
// level is worktree. It reads the worktree's HEAD file in process (cheap
// enough to list hundreds of worktrees) and resolves it with the Reader;
// anything it does not recognise is asked of git. An unborn or missing
// HEAD gives ErrUnknownRevision.
func (r *Reader) WorktreeHead(ctx context.Context, worktree string) (string, error) {
	if id, ok := r.worktreeHeadInProcess(ctx, worktree); ok {
		return id, nil
	}
	o := treeOpts(worktree)
	o.ReadOnly = true
	res, err := Run(ctx, worktree, o, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", classify(err, ErrUnknownRevision, "Needed a single revision", "unknown revision")
	}
	id := strings.TrimSuffix(string(res.Stdout), "\n")
	if !IsObjectID(id) {
		return "", Unexpected("git rev-parse", "%q is not an object id", id)
	}
	return id, nil
}

func (r *Reader) worktreeHeadInProcess(ctx context.Context, worktree string) (string, bool) {
	if r.repo == nil {
		return "", false
	}
	dotgit, err := readSmallFile(filepath.Join(worktree, ".git"))
	if err != nil {
		return "", false // a directory (main worktree) or unreadable: ask git
	}
	gitdir, ok := strings.CutPrefix(strings.TrimRight(string(dotgit), "\n"), "gitdir: ")
	if !ok || strings.ContainsAny(gitdir, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(worktree, gitdir)
	}
	head, err := readSmallFile(filepath.Join(gitdir, "HEAD"))
	if err != nil {
		return "", false
	}
	h := strings.TrimRight(string(head), "\n")
	if ref, ok := strings.CutPrefix(h, "ref: "); ok {
		if !strings.HasPrefix(ref, "refs/") {
			return "", false
		}
		if id, ok := r.looseBranch(gitdir, ref); ok {
			return id, true
		}
		id, err := r.ResolveCommit(ctx, ref)
		return id, err == nil
	}
	if IsObjectID(h) {
		return h, true
	}
	return "", false
}

// looseBranch resolves the branch ref (refs/heads/...) that the linked
// worktree with git directory gitdir has checked out, from its loose ref
// file in the common directory, which git reads before packed-refs. A
// branch that is not a plain loose file naming an object (packed, a
// symbolic ref, another ref storage) reports !ok and is resolved the
// general way. The commit each object id peels to is looked up once per
// Reader: listing a thousand worktrees at a few commits reads a few
// objects.
func (r *Reader) looseBranch(gitdir, ref string) (string, bool) {
	if !strings.HasPrefix(ref, "refs/heads/") || !plainRefName(ref) {
		return "", false
	}
	common, err := readSmallFile(filepath.Join(gitdir, "commondir"))
	if err != nil {
		return "", false
	}
	dir := strings.TrimRight(string(common), "\n")
	if dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(gitdir, dir)
	}
	data, err := readSmallFile(filepath.Join(dir, filepath.FromSlash(ref)))
	if err != nil {
		return "", false
	}
	id := strings.TrimSuffix(string(data), "\n")
	if len(id) != 40 || !IsObjectID(id) { // go-git reads SHA-1 repositories only
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.peeled[id]; ok {
		return c, true
	}
	c, ok := r.peelToCommit(plumbing.NewHash(id))
	if ok {
		if r.peeled == nil {
			r.peeled = map[string]string{}
		}
		r.peeled[id] = c
	}
	return c, ok
}

// RefExists reports whether the full ref name (refs/...) exists, in
// process when it can (a missing ref would otherwise cost a git process).
func (r *Reader) RefExists(ctx context.Context, name string) (bool, error) {
	if !strings.HasPrefix(name, "refs/") || strings.ContainsAny(name, "\x00\n") {
		return false, fmt.Errorf("gitops: %q is not a full ref name", name)
	}
	if r.repo != nil {
		r.mu.Lock()
		_, err := r.repo.Reference(plumbing.ReferenceName(name), false)
		r.mu.Unlock()
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, plumbing.ErrReferenceNotFound):
			return false, nil
		}
	}
	res, err := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true, OKCodes: []int{1}}), "show-ref", "--verify", "-q", "--", name)
	if err != nil {
		return false, err
	}
	return res.Code == 0, nil
}

// WorktreePaths returns the top-level paths of the repository's worktrees,
// the main one first (omitted for a bare repository), as git records them:
// each linked worktree's <common dir>/worktrees/<id>/gitdir names its .git
// file. It reads those files in process; anything it does not recognise
// falls back to `git worktree list`. Worktrees whose directory is gone are
// included: their paths may come back.
//
// A concurrent `git worktree add` creates its entry in steps; an entry
// caught half-made is read again after a moment (for up to about a
// second) rather than skipped, since skipping it would hide a peer.
func WorktreePaths(ctx context.Context, commonDir string) ([]string, error) {
	var wts []Worktree
	var err error
	for attempt := 0; ; attempt++ {
		paths, ok, partial := worktreePathsInProcess(commonDir)
		if ok {
			return paths, nil
		}
		if !partial {
			wts, err = ListWorktrees(ctx, commonDir) // retries half-made entries itself
			break
		}
		if attempt >= 100 {
			return nil, fmt.Errorf("gitops: a worktree entry under %s stays incomplete", filepath.Join(commonDir, "worktrees"))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, w := range wts {
		if !w.Bare {
			paths = append(paths, w.Path)
		}
	}
	return paths, nil
}

// worktreePathsInProcess reads the worktree entries; partial reports an
// entry that a concurrent add has not finished writing.
func worktreePathsInProcess(commonDir string) (paths []string, ok, partial bool) {
	if filepath.Base(commonDir) != ".git" {
		return nil, false, false // bare, or a separate git dir: let git say
	}
	paths = []string{filepath.Dir(commonDir)}
	entries, err := os.ReadDir(filepath.Join(commonDir, "worktrees"))
	if errors.Is(err, os.ErrNotExist) {
		return paths, true, false
	}
	if err != nil {
		return nil, false, false
	}
	for _, e := range entries {
		if !e.IsDir() {
			return nil, false, false
		}
	}
	// Each entry's gitdir file, read by a few goroutines: with a thousand
	// worktrees this is most of the time allocate spends before its claim.
	type read struct {
		path         string
		bad, partial bool
	}
	out := make([]read, len(entries))
	workers.Each(len(entries), 2, func(i int) {
		b, err := readSmallFile(filepath.Join(commonDir, "worktrees", entries[i].Name(), "gitdir"))
		if errors.Is(err, os.ErrNotExist) {
			out[i] = read{bad: true, partial: true}
			return
		}
		p := strings.TrimRight(string(b), "\n")
		// A name that is not clean (a ".." after a symbolic link, as a
		// repair by hand leaves it) is git's to list: git keeps it as
		// written, and cleaning it would name another folder.
		if err != nil || !filepath.IsAbs(p) || filepath.Base(p) != ".git" || strings.ContainsAny(p, "\n\x00") || filepath.Clean(p) != p {
			out[i] = read{bad: true, partial: p == "" && err == nil} // an empty file: being written
			return
		}
		out[i] = read{path: filepath.Dir(p)}
	})
	for _, r := range out {
		if r.bad {
			return nil, false, r.partial
		}
		paths = append(paths, r.path)
	}
	return paths, true, false
}

// Head returns the commit id HEAD of the Reader's own directory names, or
// "" on an unborn branch. In process it reads the ref only: loading the
// object (and so a pack index) would cost more than the rest of a small
// snapshot, and commit-tree checks that the parent is a commit.
func (r *Reader) Head(ctx context.Context) (string, error) {
	if r.repo != nil {
		r.mu.Lock()
		ref, err := r.repo.Reference(plumbing.HEAD, true)
		r.mu.Unlock()
		if err == nil && !ref.Hash().IsZero() {
			return ref.Hash().String(), nil
		}
	}
	id, err := ResolveCommitWith(ctx, r.dir, r.tree, "HEAD")
	if err == nil || !errors.Is(err, ErrUnknownRevision) {
		return id, err
	}
	// HEAD names no commit: an unborn branch if HEAD is a symbolic ref,
	// else something is wrong and no caller may pretend otherwise.
	if _, serr := Run(ctx, r.dir, r.opts(Cmd{ReadOnly: true}), "symbolic-ref", "-q", "HEAD"); serr != nil {
		return "", err
	}
	return "", nil
}
