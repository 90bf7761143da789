package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/internal/durable"
)

// The git side of recycling a kept trash into the warm pool (the
// provider's pool_recycle.go): the folder of a reclaimed workspace, renamed
// into a pool folder and its own git entry dropped, gets a fresh entry (as
// `git worktree add --detach --lock` makes one, but nothing checked out:
// the files are there) and is cleaned to a commit, touching only what
// differs. Nothing of git's entry of the task before is carried over: no
// per-worktree config, refs, reflog, sparse-checkout file, operation state
// or index flags.

// PoolEntryName is the name git gives the entry of a worktree whose folder
// is worktree (`git worktree add` turns the leading dots of a folder's name
// into a dash): a recycled pooled worktree's entry is named as a filled
// one's would be.
func PoolEntryName(worktree string) string {
	name := filepath.Base(worktree)
	if trimmed := strings.TrimLeft(name, "."); trimmed != name {
		name = "-" + trimmed
	}
	return name
}

// PoolEntryDir is where the entry PoolEntryName names lives.
func PoolEntryDir(commonDir, worktree string) string {
	return filepath.Join(commonDir, "worktrees", PoolEntryName(worktree))
}

// FreshEntry gives the folder worktree, whose own git entry is gone, a new
// entry of git's in the repository whose common dir is commonDir: HEAD
// detached at commit, locked with reason, pinned with pin (WriteEntryPin),
// its commondir and gitdir files, and an index read from commit's tree
// (no stat data yet: CleanToBase brings it). The entry is written whole in
// stage (a fresh folder on the common dir's file system, outside git's
// worktrees folder) and renamed into place with one rename that never
// replaces anything: git never sees it half made. Then the folder's .git
// file is pointed at it. It returns the entry's folder.
func FreshEntry(ctx context.Context, commonDir, stage, worktree, commit, reason, pin string) (string, error) {
	if !IsObjectID(commit) || reason == "" || strings.ContainsAny(reason, "\n\x00") || !filepath.IsAbs(worktree) {
		return "", errors.New("gitops: a fresh entry needs an absolute folder, a commit id and a one-line lock reason")
	}
	if pin == "" || strings.ContainsAny(pin, "\n\x00") {
		return "", errors.New("gitops: a pin is one line")
	}
	admin := PoolEntryDir(commonDir, worktree)
	if _, err := os.Lstat(admin); !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: git's entry %s exists", ErrPathExists, admin)
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		return "", err
	}
	// locked first: an entry git could see is never one a prune drops.
	for _, f := range []struct{ name, body string }{
		{"locked", reason},
		{"commondir", "../..\n"},
		{"HEAD", commit + "\n"},
		{"gitdir", filepath.Join(worktree, ".git") + "\n"},
		{pinFile, pin + "\n"},
	} {
		if err := durable.Publish(stage, f.name, []byte(f.body)); err != nil {
			return "", err
		}
	}
	if err := durable.MoveDir(stage, admin); err != nil {
		return "", err
	}
	if err := durable.Replace(worktree, ".git", []byte("gitdir: "+admin+"\n")); err != nil {
		return "", err
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return "", err
	}
	if _, err := Run(ctx, abs, o, "read-tree", "--end-of-options", commit); err != nil {
		return "", err
	}
	return admin, nil
}

// CleanToBase brings the worktree whose top level is worktree (HEAD
// detached at commit, its index commit's tree, FreshEntry) to exactly
// commit's files, touching only what differs: the index learns the stat
// data of every file whose content is commit's (`git update-index
// --refresh` reads each file once; forgetConverted takes back those whose
// bytes only compare equal through git's conversions), every other tracked
// file is written
// from commit (`git read-tree --reset -u`, which replaces what is in its
// way), and every untracked and ignored file and folder is deleted (`git
// clean -d -x`, which leaves a folder holding another repository), but the
// paths of keep (exact paths relative to the top level) when they are
// there and no part of them is a symbolic link (one that is is deleted: a
// kept cache never leads out of the worktree). No hook runs. The caller
// checks the result (git status).
func CleanToBase(ctx context.Context, worktree, commit string, keep []string) error {
	if !IsObjectID(commit) {
		return fmt.Errorf("gitops: clean to %q: not a commit id", commit)
	}
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(o.GitDir, "HEAD")); err != nil || strings.TrimSpace(string(b)) != commit {
		return fmt.Errorf("%w: HEAD of %s is not detached at %s", ErrRefChanged, worktree, commit)
	}
	refresh := o
	refresh.OKCodes = []int{1}
	if _, err := Run(ctx, abs, refresh, "update-index", "-q", "--refresh"); err != nil {
		return err
	}
	if err := forgetConverted(ctx, abs, o); err != nil {
		return err
	}
	if _, err := Run(ctx, abs, o, "-c", "core.hooksPath="+noHooksDir, "read-tree", "--reset", "-u", "--end-of-options", commit); err != nil {
		return err
	}
	args := []string{"clean", "-f", "-d", "-x", "-q"}
	for _, k := range keep {
		if !linkFree(abs, k) {
			continue // a symbolic link reaches elsewhere: cleaned (the link, never what it names)
		}
		args = append(args, "-e", "/"+escapeIgnore(k))
	}
	_, err = Run(ctx, abs, o, args...)
	return err
}

// linkFree reports whether no part of the relative path rel under top
// (slash-separated) is a symbolic link: a kept path must be the
// worktree's own folder or file, not a way out of it.
func linkFree(top, rel string) bool {
	at := top
	for _, part := range strings.Split(rel, "/") {
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return false
		}
	}
	return true
}

// escapeIgnore makes an exact path a gitignore pattern that matches it
// alone.
func escapeIgnore(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`\*?[!# `, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
