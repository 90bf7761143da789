package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/openers"
)

// Checks that keep a hand-out what `git worktree add` would have made:
// nothing in git's entry of the pooled worktree that a new worktree does
// not have, no settings of the main worktree that git would copy into a
// new one, and no process using the pooled folder (its working directory
// or an open file would follow the rename into the task's workspace).

// poolSettingsUnfit says why no pooled worktree can be handed out in
// this repository now ("" when one can): git worktree add copies the
// main worktree's per-worktree config and sparse-checkout patterns into
// each new worktree, and a pooled one carries those of its fill; on a
// system where the processes using a folder cannot be listed, none is
// known to be unused.
func (p *Provider) poolSettingsUnfit() string {
	if gitops.CopiesWorktreeSettings(p.reg.CommonDir) {
		return "worktree_settings"
	}
	if !openers.Supported() {
		return "processes_unknown"
	}
	return ""
}

// checkPoolEntry fails when git's entry of a pooled worktree holds
// anything a worktree just made does not: per-worktree config (which can
// aim git at another directory), a sparse-checkout file, refs, an
// operation's state, HEAD's reflog of commits made there.
func checkPoolEntry(entry, base string) error {
	extra, err := gitops.PoolEntryExtra(entry, base)
	if err != nil {
		return poolCheckFailed("git's records of it cannot be read: %v", err)
	}
	if extra != "" {
		return poolCheckFailed("git's records of it hold %s, which a new worktree does not have (per-worktree settings, refs, an operation's state, commits): a workspace would inherit it, a drain would lose it", extra)
	}
	return nil
}

// scanPoolUsers starts listing the processes that use the pooled folder
// at physical (a working directory, root, executable or open file in
// it), beside the hand-out's checks and switch. The function it returns
// waits for the answer: an *errPoolCheck when some process uses it, or
// when they cannot be listed. Such a process would follow the rename:
// a shell left in the pool's folder would write into the task's
// workspace.
func scanPoolUsers(physical string) func() error {
	done := make(chan error, 1)
	go func() {
		found, err := openers.Scan([]string{physical})
		switch {
		case err != nil:
			done <- poolCheckFailed("the processes that use it cannot be listed: %v", err)
		case len(found[physical]) > 0:
			done <- poolCheckFailed("a process uses it, and would follow it into the workspace: %s", describeProcesses(found[physical]))
		default:
			done <- nil
		}
	}()
	return func() error { return <-done }
}

// poolSettingsPath is where a fill records the checkout settings a
// pooled worktree was made under (gitops.CheckoutSettings).
func (p *Provider) poolSettingsPath(binding string) string {
	return filepath.Join(p.stateDir, "pool", binding+".settings")
}

// recordPoolSettings records, before git makes the pooled worktree of
// rec, the checkout settings it is made under: settings changed while it
// is made then differ from the record, and it is never handed out.
func (p *Provider) recordPoolSettings(ctx context.Context, rec *claimRecord) error {
	s, err := gitops.CheckoutSettings(ctx, rec.Claim.CommonDir)
	if err != nil {
		return err
	}
	path := p.poolSettingsPath(rec.Claim.Binding)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return durable.Replace(filepath.Dir(path), filepath.Base(path), []byte(s+"\n"))
}

// checkPoolSettings starts comparing the checkout settings in force now
// with those the pooled worktree of rec was made under, beside the
// hand-out's checks and switch; the function it returns waits for the
// answer, an *errPoolCheck when they differ: the files git wrote then
// (end of line, filters, attributes) or its index are not what a
// worktree made now would have.
func (p *Provider) checkPoolSettings(ctx context.Context, rec *claimRecord) func() error {
	done := make(chan error, 1)
	go func() {
		made, err := os.ReadFile(p.poolSettingsPath(rec.Claim.Binding))
		if err != nil {
			done <- poolCheckFailed("the checkout settings it was made under are not known: %v", err)
			return
		}
		now, err := gitops.CheckoutSettings(ctx, rec.Claim.CommonDir)
		switch {
		case err != nil:
			done <- poolCheckFailed("the checkout settings in force cannot be read: %v", err)
		case strings.TrimSpace(string(made)) != now:
			done <- poolCheckFailed("it was made under other checkout settings (end of line, filters, attributes, index format) than a worktree made now gets")
		default:
			done <- nil
		}
	}()
	return func() error { return <-done }
}

// entryPath is the path git's entry of the workspace of c records, as
// git worktree add records it: the physical one (symbolic links in its
// parents resolved), so that git lists it where worktree add would.
func entryPath(c Claim) string {
	if c.PhysicalPath != "" {
		return c.PhysicalPath
	}
	return c.Path
}

// checkPoolIndex fails when the index of the pooled worktree of rec at
// dir (git's entry entry) marks an entry assume-unchanged or
// skip-worktree, intent-to-add, or holds a conflict: git status does not
// show a file so marked that differs (an edit hidden there would be
// handed out, or deleted by a drain), and a new worktree's index has no
// such entry.
func checkPoolIndex(ctx context.Context, rec *claimRecord, entry, dir string) error {
	path, err := gitops.HiddenIndexEntry(ctx, dir, entry, len(rec.Claim.Base)/2)
	if err != nil {
		return poolCheckFailed("its index cannot be read: %v", err)
	}
	if path != "" {
		return poolCheckFailed("its index marks %s (assume-unchanged, skip-worktree, intent-to-add or a conflict): its file may differ without git showing it", path)
	}
	return nil
}
