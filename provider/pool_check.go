package provider

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// errPoolCheck is the reason a pooled worktree failed a check: it is
// set aside (hand-out) or left (drain), never acted on.
type errPoolCheck struct{ why string }

func (e *errPoolCheck) Error() string { return e.why }

func poolCheckFailed(format string, a ...any) error {
	return &errPoolCheck{why: fmt.Sprintf(format, a...)}
}

// checkPooled verifies that the pooled worktree of rec is still the one
// majlis made and still clean: its folder has the identity the created
// event recorded, its .git file and git's entry point at each other, the
// entry carries the claim's pin and majlis's lock (needLock; otherwise no
// lock or majlis's), HEAD is detached at the claim's base, and git sees
// nothing but the checkout: no change, no untracked and no ignored file.
// It returns git's entry of it. A failure is an *errPoolCheck (the
// worktree is not as majlis left it), or another error when it could not
// be looked at.
//
// Every file in it must have one name (no hard link into or out of it).
// With fast, a pooled worktree that still matches its stamp (the
// identity of every file and folder in it, of its index and HEAD, as git
// made them: pool_stamp.go) needs no git status.
func (p *Provider) checkPooled(ctx context.Context, rec *claimRecord, needLock, fast bool) (string, error) {
	c := rec.Claim
	created := rec.Events[EventCreated]
	id, err := pathid.Lstat(c.Path)
	if err != nil {
		return "", poolCheckFailed("its folder %s cannot be looked at: %v", c.Path, err)
	}
	if created != nil && (id.Dev != created.Dev || id.Ino != created.Ino) {
		return "", poolCheckFailed("its folder %s is not the one majlis made (another directory is there)", c.Path)
	}
	entry, err := verifyRepository("pool", rec)
	if err != nil {
		return "", poolCheckFailed("%v", err)
	}
	lock, err := gitops.ReadWorktreeLock(entry)
	if err != nil {
		return "", err
	}
	switch {
	case lock.Locked && !ownLock(rec, lock.Reason):
		return "", poolCheckFailed("git's lock on it has the reason %q, not majlis's", lock.Reason)
	case !lock.Locked && needLock:
		return "", poolCheckFailed("majlis's lock on it was lifted")
	}
	pin, err := gitops.ReadEntryPin(entry)
	switch {
	case err == nil && pin != rec.Digest:
		return "", poolCheckFailed("git's entry of it is pinned by another claim (%s)", shortDigest(pin))
	case errors.Is(err, os.ErrNotExist) && (created != nil || !lock.Locked):
		return "", poolCheckFailed("git's entry of it has no majlis pin")
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", poolCheckFailed("majlis's pin in git's entry of it: %v", err)
	}
	// git never makes a hard link in a checkout: a file with another
	// name is shared with a path outside (someone's file), which the
	// workspace's edits would change. git status cannot see it.
	got, err := stampOf(rec, entry)
	var linked *errHardLinked
	if errors.As(err, &linked) {
		return "", poolCheckFailed("%s has another name outside it (a hard link): edits in a workspace would change that file too", linked.path)
	}
	if fast && err == nil && p.stampHolds(rec, got) {
		return entry, nil
	}
	st, err := gitops.ReadStatus(ctx, c.Path, gitops.StatusOptions{Ignored: true})
	if err != nil {
		return "", poolCheckFailed("git status in it failed: %v", err)
	}
	switch {
	case !st.Detached || st.Head != c.Base:
		return "", poolCheckFailed("its HEAD moved (%s, branch %q), it was detached at %s", shortDigest(st.Head), st.Branch, shortDigest(c.Base))
	case len(st.Entries) > 0:
		return "", poolCheckFailed("it is not clean: %s (%d path(s) changed, untracked or ignored)", st.Entries[0].Path, len(st.Entries))
	}
	return entry, nil
}
