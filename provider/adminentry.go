package provider

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
)

// A workspace is more than a directory: git keeps an administrative entry
// for it (<common dir>/worktrees/<id>), and git decides from the
// workspace's config where a command run there acts. Reclaim acts only
// when all three are the workspace's own:
//
//   - the directory is the one allocated (verifyIdentity: device and inode);
//   - its .git file points into the claimed repository and the entry points
//     back (verifyRepository), and the entry carries majlis's pin: the file
//     majlis-claim holding the claim digest, written at allocation. git
//     deletes it with the entry, so a worktree added later at the same
//     path (git reuses the entry's name, a file system may reuse the
//     inode) has none (verifyAdminEntry);
//   - the entry is not locked by anyone else: majlis's lock is the exact
//     reason it wrote (lockReason), and it never lifts another
//     (verifyAdminEntry);
//   - git, run plainly in the workspace, resolves the workspace and its
//     git directory (verifyGitView): no core.worktree or core.bare of the
//     workspace's own config aims it elsewhere.

// lockReason is the exact reason majlis locks a workspace's worktree with,
// at allocation and again when a removal fails.
func lockReason(rec *claimRecord) string {
	return fmt.Sprintf("majlis workspace %s (claim %s)", rec.Claim.Binding, shortDigest(rec.Digest))
}

// ownLock reports whether a lock's reason is majlis's own for rec: the
// allocation's, or the one that earlier versions put back after a removal
// failed ("reclaim interrupted").
func ownLock(rec *claimRecord, reason string) bool {
	return reason == lockReason(rec) || reason == "majlis workspace "+rec.Claim.Binding+" (reclaim interrupted)"
}

// An adminEntry is the verified administrative entry of a workspace.
type adminEntry struct {
	dir    string              // <common dir>/worktrees/<id>
	pinned bool                // it carries the claim's pin
	lock   gitops.WorktreeLock // majlis's own lock, or none
}

// verifyAdminEntry checks the workspace's admin entry dir (verified by
// verifyRepository, or found by its back-pointer when the directory is
// gone): locked by nobody but majlis, and pinned with the claim digest.
// An entry without a pin is accepted, unpinned, only when majlis's own
// lock for this claim is on it: a workspace allocated before majlis pinned
// entries. git cannot prune a locked entry, so a worktree added later at
// the same path cannot carry that lock unless someone wrote it by hand.
func verifyAdminEntry(op string, rec *claimRecord, dir string, missing bool) (*adminEntry, error) {
	c := rec.Claim
	lock, err := gitops.ReadWorktreeLock(dir)
	if err != nil {
		return nil, &Error{Op: op, Binding: c.Binding, Path: dir, Err: err}
	}
	if lock.Locked && !ownLock(rec, lock.Reason) {
		return nil, lockedError(op, rec, dir, lock.Reason)
	}
	e := &adminEntry{dir: dir, lock: lock}
	pin, err := gitops.ReadEntryPin(dir)
	switch {
	case err == nil && pin == rec.Digest:
		e.pinned = true
		return e, nil
	case err == nil:
		return nil, &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
			Reason:  fmt.Sprintf("git's entry for the worktree (%s) is pinned by another claim (%s), not this workspace's", dir, shortDigest(pin)),
			Hint:    "majlis will not act on it; inspect the worktree",
			Details: map[string]any{"admin_entry": dir}}
	case errors.Is(err, fs.ErrNotExist) && lock.Locked:
		return e, nil // allocated before pins; pinned by the reclaim
	case errors.Is(err, fs.ErrNotExist):
		hint := fmt.Sprintf("inspect it. If it is the workspace (allocated before majlis pinned git's entries, its lock lifted by hand), lock it again: git worktree lock --reason %q %s; then reclaim again and majlis pins it",
			lockReason(rec), c.Path)
		if missing {
			hint = "majlis leaves that entry alone. If the worktree's directory is gone for good, 'git worktree prune' drops git's entry; then reclaim again to retire the claim"
		}
		return nil, &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrIdentity,
			Reason: fmt.Sprintf("git's entry for the worktree at this path (%s) has no majlis pin and no majlis lock: it may be a worktree added at the same path after git pruned the workspace's entry", dir),
			Hint:   hint, Details: map[string]any{"admin_entry": dir}}
	default:
		return nil, &Error{Op: op, Binding: c.Binding, Path: dir, Err: ErrMalformed, Reason: "majlis's pin: " + err.Error(),
			Hint: "inspect the file majlis-claim there"}
	}
}

// lockedError refuses a workspace locked with a reason majlis did not
// write (or none).
func lockedError(op string, rec *claimRecord, dir, reason string) error {
	c := rec.Claim
	why := fmt.Sprintf("git's lock on it has the reason %q, not majlis's", reason)
	if reason == "" {
		why = "git's lock on it has no reason, so it is not majlis's"
	}
	return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrLocked,
		Reason: why + "; majlis never lifts a lock it did not set",
		Hint: "whoever locked it hands it back with 'git worktree unlock " + c.Path + "' once it may go (or keeps it: then leave the workspace be); " +
			"then reclaim again",
		Details: map[string]any{"lock_reason": reason, "admin_entry": dir}}
}

// verifyGitView checks that git, run plainly in the workspace, resolves
// the workspace and its git directory (gitops.CheckWorkTree). majlis
// names both to every git command it runs there anyway; a difference
// means the workspace's own config aims the user's git elsewhere, and is
// refused before any effect.
func verifyGitView(ctx context.Context, op string, rec *claimRecord) error {
	c := rec.Claim
	err := gitops.CheckWorkTree(ctx, c.Path)
	var m *gitops.WorkTreeMismatch
	if !errors.As(err, &m) {
		return err
	}
	var why strings.Builder
	switch {
	case m.Bare || m.GitTopLevel == "":
		why.WriteString("run there, git finds no work tree")
	case m.GitTopLevel != m.Dir:
		fmt.Fprintf(&why, "run there, git would act on %s instead", m.GitTopLevel)
	default:
		fmt.Fprintf(&why, "run there, git would use the git directory %s instead of %s", m.GitGitDir, m.GitDir)
	}
	details := map[string]any{"git_work_tree": m.GitTopLevel, "git_dir": m.GitGitDir}
	var fixes []string
	for i, s := range m.Settings {
		fmt.Fprintf(&why, "; %s = %s (%s config, %s)", s.Key, s.Value, s.Scope, strings.TrimPrefix(s.Origin, "file:"))
		if i == 0 {
			details["setting"], details["value"], details["origin"] = s.Key, s.Value, s.Origin
		}
		scope := "--" + s.Scope
		if s.Scope != "worktree" && s.Scope != "local" && s.Scope != "global" && s.Scope != "system" {
			scope = "--file " + strings.TrimPrefix(s.Origin, "file:")
		}
		fixes = append(fixes, fmt.Sprintf("git -C %s config %s --unset %s", c.Path, scope, s.Key))
	}
	hint := "inspect the workspace's git configuration (git config --show-origin --get-regexp '^core[.]' run in it) and fix it; then reclaim again"
	if len(fixes) > 0 {
		hint = "if the setting is not meant for this workspace, remove it (" + strings.Join(fixes, "; ") + "); then reclaim again"
	}
	return &Error{Op: op, Binding: c.Binding, Path: c.Path, Err: ErrWorktreeConfig,
		Reason: why.String(), Hint: hint, Details: details}
}
