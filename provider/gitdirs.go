package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// errMainUnknown: the repository has a main worktree (its git directory
// lives apart from it: `git init --separate-git-dir`) that neither the
// registration nor git can locate from here.
var errMainUnknown = errors.New("the main worktree cannot be located")

// locateMain returns the main worktree of the repository that repo (the
// worktree a provider is opened from) belongs to, or "" for a bare
// repository, which has none.
//
// Git derives the main worktree from the common dir's name (<main>/.git),
// and lists the common dir itself first in `git worktree list` when the
// git directory lives apart (a separate git dir sets no core.worktree), so
// majlis records the main worktree at init, and checks it when opened
// from a main worktree. A registration made before majlis recorded it
// falls back on discovery: the common dir's name, or the worktree it is
// opened from when that is the main one; otherwise, for a repository
// that is not bare, errMainUnknown (callers refuse what needs the peers).
func locateMain(ctx context.Context, op string, repo gitops.Repo, reg *Registration) (string, error) {
	if reg != nil && reg.MainWorktree != "" {
		if !repo.Linked() && repo.Toplevel != reg.MainWorktree {
			if same, _ := pathid.Compare(repo.Toplevel, reg.MainWorktree); same.Relation != pathid.Equal {
				return "", &Error{Op: op, Path: repo.Toplevel, Err: ErrIdentity,
					Reason: "the repository's main worktree was registered at " + reg.MainWorktree + ", not here",
					Hint:   "move the main worktree back to " + reg.MainWorktree + " (majlis judges peers by where it is)"}
			}
		}
		return reg.MainWorktree, nil
	}
	if repo.MainWorktree != "" {
		return repo.MainWorktree, nil
	}
	wts, err := gitops.ListWorktrees(ctx, repo.CommonDir)
	if err != nil {
		return "", err
	}
	if len(wts) > 0 && wts[0].Bare {
		return "", nil
	}
	return "", errMainUnknown
}

// mainUnknown is the refusal of an operation that needs every peer when
// the main worktree cannot be located.
func (p *Provider) mainUnknown(op, binding string) error {
	return &Error{Op: op, Binding: binding, Path: p.reg.CommonDir, Err: ErrIdentity,
		Reason: "the repository's git directory lives apart from its main worktree, which this registration (made by an older majlis) does not name",
		Hint:   "run the command from inside the main worktree, where majlis can see it"}
}

// checkOutsideGitDirs refuses (ErrUnsafePath) a workspace path inside, or
// equal to, a git directory of the repository: the common dir (which holds
// every admin entry, worktrees/<id>, and majlis's own state), a separate
// git dir, the git directory of the worktree the provider was opened
// from. A worktree there would break the ref namespace or majlis's
// records.
func (p *Provider) checkOutsideGitDirs(binding, path, physical string) error {
	dirs := []string{p.reg.CommonDir, p.repo.CommonDir, p.repo.GitDir, p.stateDir}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		forms := []string{d}
		if pd, err := pathid.Physical(d); err == nil {
			forms = append(forms, pd)
		}
		for _, f := range forms {
			for _, a := range []string{path, physical} {
				if r := pathid.Relate(a, f); r == pathid.Equal || r == pathid.BContainsA {
					return &Error{Op: "allocate", Binding: binding, Path: path, Peer: d, Err: ErrUnsafePath,
						Reason: fmt.Sprintf("%s lies inside the git directory %s", path, d),
						Hint:   "choose a path outside the repository's git directories"}
				}
			}
		}
	}
	return nil
}

// isGitDir reports whether the directory dir, whose entry names are given,
// is one git would open as a git directory: HEAD, with objects/ and refs/
// (a repository, bare or not), or with a commondir file (a worktree's
// admin entry).
func isGitDir(dir string, names map[string]bool) bool {
	if !names["HEAD"] {
		return false
	}
	if names["commondir"] {
		return true
	}
	if !names["objects"] || !names["refs"] {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}
