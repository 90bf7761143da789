package gitops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What makes a pooled worktree handed out the worktree `git worktree add`
// would have made, beyond its files: nothing in git's entry that a new
// worktree does not have, HEAD's reflog and ORIG_HEAD as that command
// writes them, and files whose conversion (.gitattributes) changed
// between the two commits written again.

// poolEntryNames are the names git's entry of a pooled worktree holds as
// `git worktree add --detach --lock` and majlis's pin leave it.
var poolEntryNames = map[string]bool{
	"HEAD": true, "ORIG_HEAD": true, "commondir": true, "gitdir": true,
	"index": true, "locked": true, "logs": true, pinFile: true,
}

// PoolEntryExtra describes the first thing in git's entry adminDir of a
// pooled worktree made detached at base that a worktree just made does
// not hold (per-worktree config, a sparse-checkout file, refs, an
// operation's state, git's lock of the index, HEAD's reflog of a move),
// or returns "" when there is none. A workspace handed out would inherit
// it (per-worktree config can aim git at another directory:
// core.worktree), and removing the entry would lose it (a commit made
// there and left, reachable from HEAD's reflog only).
func PoolEntryExtra(adminDir, base string) (string, error) {
	names, err := readNames(adminDir)
	if err != nil {
		return "", err
	}
	for _, n := range names {
		// A split index keeps its shared part beside the index.
		if !poolEntryNames[n] && !strings.HasPrefix(n, "sharedindex.") {
			return strconv.Quote(n), nil
		}
	}
	logs, err := readNames(filepath.Join(adminDir, "logs"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	for _, n := range logs {
		if n != "HEAD" {
			return strconv.Quote("logs/" + n), nil
		}
	}
	// git worktree add --detach writes one entry: HEAD born at base;
	// git gc's reflog expiry may have emptied it since (nothing in it).
	b, err := os.ReadFile(filepath.Join(adminDir, "logs", "HEAD"))
	if errors.Is(err, os.ErrNotExist) || err == nil && len(b) == 0 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	null := strings.Repeat("0", len(base))
	if n := bytes.Count(b, []byte("\n")); n != 1 || !bytes.HasPrefix(b, []byte(null+" "+base+" ")) {
		return fmt.Sprintf("a history of HEAD other than its making (%d entries)", n), nil
	}
	return "", nil
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// CopiesWorktreeSettings reports whether `git worktree add` run in the
// repository whose common directory is commonDir copies settings of the
// main worktree into each new worktree: its per-worktree config (with
// extensions.worktreeConfig) or its sparse-checkout patterns. A pooled
// worktree would carry those of the moment it was made, not the ones a
// worktree made now gets.
func CopiesWorktreeSettings(commonDir string) bool {
	for _, name := range []string{"config.worktree", filepath.Join("info", "sparse-checkout")} {
		if _, err := os.Lstat(filepath.Join(commonDir, name)); err == nil || !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// writeAddedHeadLog gives the worktree whose git directory is gitDir,
// just put on its branch at commit, the HEAD reflog and ORIG_HEAD that
// `git worktree add` writes: HEAD born at commit, then its `reset:
// moving to HEAD`, with the identity and time of the entry git wrote
// last (the switch to the branch). The pooled worktree's own history
// (its fill's base, at the fill's time) is not the workspace's.
func writeAddedHeadLog(gitDir, commit string) error {
	if err := replaceUnsynced(gitDir, "ORIG_HEAD", []byte(commit+"\n")); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "logs", "HEAD"))
	if errors.Is(err, os.ErrNotExist) {
		return nil // core.logAllRefUpdates off: git wrote none
	}
	if err != nil {
		return err
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	last := string(lines[len(lines)-1])
	fields := strings.SplitN(last, " ", 3)
	if len(fields) != 3 || !IsObjectID(fields[0]) || !IsObjectID(fields[1]) {
		return Unexpected("HEAD's reflog", "want an entry, got %q", last)
	}
	who, _, _ := strings.Cut(fields[2], "\t")
	null := strings.Repeat("0", len(commit))
	log := fmt.Sprintf("%s %s %s\n%s %s %s\treset: moving to HEAD\n", null, commit, who, commit, commit, who)
	return replaceUnsynced(filepath.Join(gitDir, "logs"), "HEAD", []byte(log))
}

// replaceUnsynced replaces dir/name whole with data (a temporary file
// renamed over it: a reader sees the old or the new), without the
// fsyncs of durable.Replace: git does not sync ORIG_HEAD or a reflog
// either, and after a crash the old ones are as good.
func replaceUnsynced(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, "."+name+".majlis-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

// attributesDiffer reports whether a .gitattributes file differs between
// commits from and to: then files the switch leaves alone may be written
// otherwise by a checkout at to (end of line, filters, ident).
func attributesDiffer(ctx context.Context, abs string, o Cmd, from, to string) (bool, error) {
	o.ReadOnly = true
	res, err := Run(ctx, abs, o, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options", from, to,
		"--", ":(glob).gitattributes", ":(glob)**/.gitattributes")
	if err != nil {
		return false, err
	}
	return len(res.Stdout) > 0, nil
}

// checkOutAll writes every file of commit again (the worktree is clean
// at commit), through the attributes and filters in force now, and
// records their stat data. The index is read from commit afresh first:
// with its stat data git would take each file as written already.
func checkOutAll(ctx context.Context, abs string, o Cmd, commit string) error {
	if _, err := Run(ctx, abs, o, "read-tree", "--end-of-options", commit); err != nil {
		return err
	}
	_, err := Run(ctx, abs, o, "-c", "core.hooksPath="+noHooksDir, "checkout-index", "--all", "--force", "--index")
	return err
}

// checkoutKeys are the config keys that decide, beside the commit, the
// files and index a checkout writes: end of line and encodings, filters,
// links, the attributes file, sparse checkout, and the index's format.
const checkoutKeys = `^(core\.(autocrlf|eol|symlinks|checkroundtripencoding|attributesfile|sparsecheckout|sparsecheckoutcone|precomposeunicode|protectntfs|protecthfs|splitindex|untrackedcache|ignorecase)|filter\..*|index\..*|feature\..*|extensions\..*)$`

// CheckoutSettings returns what, beside the commit, decides the files
// and the index `git -C commonDir worktree add` writes: the config that
// converts, filters or lays them out (the repository's, the user's, the
// environment's), and the attributes kept outside the tree (the
// repository's info/attributes, the user's attributes file). Two equal
// answers mean a checkout writes the same files; a pooled worktree made
// under other settings is not what a worktree made now would be.
func CheckoutSettings(ctx context.Context, commonDir string) (string, error) {
	res, err := Run(ctx, commonDir, Cmd{ReadOnly: true, OKCodes: []int{1}}, "config", "-z", "--get-regexp", checkoutKeys)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(res.Stdout)
	attrs := ""
	for _, kv := range bytes.Split(res.Stdout, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("\n")); ok && string(k) == "core.attributesfile" {
			attrs = string(v)
		}
	}
	for _, f := range []string{filepath.Join(commonDir, "info", "attributes"), userAttributesFile(attrs)} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		// The content counts, not where it is (another HOME with
		// the same attributes, or none, checks out the same).
		fmt.Fprintf(h, "\x00%d\x00", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// userAttributesFile is the attributes file git reads for the user:
// core.attributesFile (a leading ~/ is the home folder), else
// $XDG_CONFIG_HOME/git/attributes, else ~/.config/git/attributes.
func userAttributesFile(configured string) string {
	home, _ := os.UserHomeDir()
	switch {
	case strings.HasPrefix(configured, "~/"):
		return filepath.Join(home, configured[2:])
	case configured != "":
		return configured
	case os.Getenv("XDG_CONFIG_HOME") != "":
		return filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "git", "attributes")
	}
	return filepath.Join(home, ".config", "git", "attributes")
}

// HiddenIndexEntry returns the first path in the index of the worktree
// whose top level is worktree (git directory gitDir, object ids of
// hashLen bytes) that a new worktree's index does not have and that git
// status may not show: marked assume-unchanged or skip-worktree (its
// file may differ without a word), intent-to-add, or in conflict; ""
// when there is none.
func HiddenIndexEntry(ctx context.Context, worktree, gitDir string, hashLen int) (string, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		return "", err
	}
	found := ""
	err = ScanIndex(data, hashLen, func(e IndexEntry) {
		if found == "" && (e.AssumeUnchanged || e.SkipWorktree || e.IntentToAdd || e.Stage != 0) {
			found = e.Path
		}
	})
	if !errors.Is(err, ErrSplitIndex) {
		return found, err
	}
	// A split index: git reads both parts. ls-files -v tags an entry H
	// when it is none of those.
	abs, o, err := OpenTree(worktree)
	if err != nil {
		return "", err
	}
	o.ReadOnly = true
	res, err := Run(ctx, abs, o, "ls-files", "-v", "-z")
	if err != nil {
		return "", err
	}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		if len(rec) > 2 && rec[0] != 'H' {
			return string(rec[2:]), nil
		}
	}
	return "", nil
}
