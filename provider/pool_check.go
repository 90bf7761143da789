package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
// nothing but the checkout: no change, no untracked file, and no ignored
// file but inside the kept paths (pool.keep_ignored: poolkeep.go).
// It returns git's entry of it. A failure is an *errPoolCheck (the
// worktree is not as majlis left it), or another error when it could not
// be looked at.
//
// Every file in it must have one name (no hard link into or out of it),
// but files git ignores inside the kept paths (a pnpm store's links); a
// kept path holds no .env and is no symbolic link.
// With fast, a pooled worktree that still matches its stamp (the
// identity of every file and folder in it, of its index and HEAD, as git
// made them: pool_stamp.go) needs no git status.
func (p *Provider) checkPooled(ctx context.Context, rec *claimRecord, needLock, fast bool) (string, error) {
	entry, _, err := p.checkPooledAt(ctx, rec, poolCheck{dir: rec.Claim.Path, needLock: needLock, fast: fast})
	return entry, err
}

// A poolCheck says where and how checkPooledAt looks at a pooled worktree.
type poolCheck struct {
	// dir is where the folder is: its pool path, or where a drain moved
	// it aside (then entry is git's entry of it, whose back-pointer still
	// names the pool path: a drain never repoints it).
	dir, entry     string
	needLock, fast bool
	// heads are commits besides the base HEAD may be detached at: the
	// base an allocation that took it had switched it to.
	heads []string
}

// checkPooledAt is checkPooled at o.dir; it also returns the commit HEAD
// is detached at (the base, or one of o.heads).
func (p *Provider) checkPooledAt(ctx context.Context, rec *claimRecord, o poolCheck) (entry, head string, err error) {
	c := rec.Claim
	if err := poolIdentityAt(rec, o.dir); err != nil {
		return "", "", err
	}
	if entry, err = poolEntryAt(rec, o); err != nil {
		return "", "", err
	}
	lock, err := gitops.ReadWorktreeLock(entry)
	if err != nil {
		return "", "", err
	}
	switch {
	case lock.Locked && !ownLock(rec, lock.Reason):
		return "", "", poolCheckFailed("git's lock on it has the reason %q, not majlis's", lock.Reason)
	case !lock.Locked && o.needLock:
		return "", "", poolCheckFailed("majlis's lock on it was lifted")
	}
	pin, err := gitops.ReadEntryPin(entry)
	switch {
	case err == nil && pin != rec.Digest:
		return "", "", poolCheckFailed("git's entry of it is pinned by another claim (%s)", shortDigest(pin))
	case errors.Is(err, os.ErrNotExist) && (rec.has(EventCreated) || !lock.Locked):
		return "", "", poolCheckFailed("git's entry of it has no majlis pin")
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", "", poolCheckFailed("majlis's pin in git's entry of it: %v", err)
	}
	if err := checkPoolEntry(entry, c.Base); err != nil {
		return "", "", err
	}
	// git never makes a hard link in a checkout: a file with another
	// name is shared with a path outside (someone's file), which the
	// workspace's edits would change. git status cannot see it.
	kept, err := p.PoolKeepIgnored()
	if err != nil {
		return "", "", poolCheckFailed("the policy's %s cannot be read: %v", PolicyPoolKeepIgnored, err)
	}
	got, err := stampAt(rec, entry, o.dir, kept)
	var linked *errHardLinked
	var inKept *errKeptPath
	switch {
	case errors.As(err, &linked):
		return "", "", poolCheckFailed("%s has another name outside it (a hard link): edits in a workspace would change that file too", linked.path)
	case errors.As(err, &inKept):
		return "", "", poolCheckFailed("%v", inKept)
	case err != nil && len(kept) > 0:
		// Without the walk, nothing says the kept paths hold no
		// hard link into someone's files, no .env, no symbolic link.
		return "", "", poolCheckFailed("its files cannot be looked at one by one: %v", err)
	}
	if o.fast && err == nil && o.dir == c.Path && p.stampHolds(rec, got) {
		return entry, c.Base, nil
	}
	if err := checkPoolIndex(ctx, rec, entry, o.dir); err != nil {
		return "", "", err
	}
	st, err := gitops.ReadStatus(ctx, o.dir, gitops.StatusOptions{Ignored: true})
	if err != nil {
		return "", "", poolCheckFailed("git status in it failed: %v", err)
	}
	if !st.Detached || (st.Head != c.Base && !slices.Contains(o.heads, st.Head)) {
		return "", "", poolCheckFailed("its HEAD moved (%s, branch %q), it was detached at %s", shortDigest(st.Head), st.Branch, shortDigest(c.Base))
	}
	if why := unkept(st.Entries, kept, got.linkedFiles()); why != "" {
		return "", "", poolCheckFailed("%s", why)
	}
	return entry, st.Head, nil
}

// poolIdentityAt checks that the folder at dir is the pooled worktree's:
// the identity its created event recorded, or, before it was made ready,
// the one a drain recorded when it began.
func poolIdentityAt(rec *claimRecord, dir string) error {
	id, err := pathid.Lstat(dir)
	if err != nil {
		return poolCheckFailed("its folder %s cannot be looked at: %v", dir, err)
	}
	want := rec.Events[EventCreated]
	if want == nil {
		want = rec.Events[EventDraining]
	}
	if want != nil && (id.Dev != want.Dev || id.Ino != want.Ino) {
		return poolCheckFailed("its folder %s is not the one majlis made (another directory is there)", dir)
	}
	return nil
}

// poolEntryAt returns git's entry of the pooled worktree at o.dir, once
// it and the folder's .git file point at each other (at its pool path),
// or the folder's .git file points at o.entry, whose back-pointer names
// the pool path (moved aside by a drain).
func poolEntryAt(rec *claimRecord, o poolCheck) (string, error) {
	c := rec.Claim
	if o.dir == c.Path {
		entry, err := verifyRepository("pool", rec)
		if err != nil {
			return "", poolCheckFailed("%v", err)
		}
		return entry, nil
	}
	gitdir, err := dotGitLink(o.dir, filepath.Join(o.dir, ".git"))
	if err != nil {
		return "", poolCheckFailed("it has no .git link: %v", err)
	}
	if gitdir != filepath.Clean(o.entry) {
		return "", poolCheckFailed("its .git file points to %s, not to git's entry of it %s", gitdir, o.entry)
	}
	back, err := os.ReadFile(filepath.Join(o.entry, "gitdir"))
	if err != nil {
		return "", poolCheckFailed("git's entry of it %s cannot be read: %v", o.entry, err)
	}
	if b := strings.TrimRight(string(back), "\n"); b != filepath.Join(c.Path, ".git") && b != filepath.Join(c.PhysicalPath, ".git") {
		return "", poolCheckFailed("git's entry %s names %s, not the pooled worktree's path", o.entry, b)
	}
	return o.entry, nil
}
