package provider

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// purgeSalvageGone salvages git's entry of a kept trash whose folder is
// gone before any purge began: moved or deleted by hand. The entry alone
// then holds what the folder held beyond its files: its HEAD (a commit
// made there on the detached HEAD the trash was kept on), its index (what
// was staged), its per-worktree refs and reflogs. The purge deletes the
// entry next, so it is salvaged first, as a reclaim salvages the entry of
// a workspace whose folder is gone (entryaside.go). It returns the new
// salvage ref, or "" when the entry holds nothing of its own or is gone.
func (p *Provider) purgeSalvageGone(ctx context.Context, r *claimRecord, mv *Event) (string, error) {
	c := r.Claim
	if _, err := os.Lstat(mv.AdminEntry); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if !ownEntry(r, mv.AdminEntry) {
		return "", &Error{Op: "purge", Binding: c.Binding, Path: mv.AdminEntry, Err: ErrIdentity,
			Reason: "the kept trash folder " + mv.TrashPath + " is gone, and git's entry of it is not the workspace's (neither its claim's pin nor majlis's lock of it); nothing was deleted",
			Hint:   "majlis will not delete it; inspect it"}
	}
	// Moved and attached again (git worktree repair): a worktree of
	// someone's, which the purge leaves, before it salvages anything.
	if back, err := os.ReadFile(filepath.Join(mv.AdminEntry, "gitdir")); err == nil {
		named := filepath.Dir(strings.TrimRight(string(back), "\n"))
		if _, err := os.Lstat(named); !errors.Is(err, os.ErrNotExist) {
			return "", &Error{Op: "purge", Binding: c.Binding, Path: mv.TrashPath, Peer: named, Err: ErrIdentity,
				Reason: "the kept trash folder was moved to " + named + " and git's entry of it names it there (git worktree repair): it is a worktree again; nothing was deleted",
				Hint:   "majlis leaves it; to have it purged, move it back to " + mv.TrashPath + " and run 'git worktree repair' there"}
		}
	}
	ref, err := p.salvageKeptEntry(ctx, r, mv.AdminEntry)
	if err != nil {
		return "", &Error{Op: "purge", Binding: c.Binding, Path: mv.AdminEntry, Err: ErrTrash,
			Reason: "the kept trash folder " + mv.TrashPath + " is gone (moved or deleted by hand), and salvaging git's entry of it failed: " + err.Error() + "; nothing was deleted",
			Hint:   "if you moved the folder, move it back (or run 'git worktree repair NEW_PATH' to keep it as a worktree); the next purge tries again"}
	}
	return ref, nil
}
