package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/wire"
)

// A linked worktree's administrative entry is the directory
// <common dir>/worktrees/<id> that its .git file names: git keeps there the
// worktree's HEAD, index, per-worktree refs and config, the back-pointer
// to its .git file (gitdir) and its lock (locked). `git worktree prune`
// and `git worktree remove` delete the whole directory, so a file put
// there dies with the entry: that is what a pin is.
//
// The functions in this file read and write those files in process (git
// has no command for a lock's reason alone, nor for a file of one's own
// there); they take the entry's directory, which the caller has verified
// (it is the one the worktree's .git names, and it points back).

// ErrWorkTreeMismatch means git, run in a worktree without being told its
// git directory and work tree, would act on another work tree or git
// directory than the one the worktree's .git file names, or on none (a
// worktree's own config can say core.worktree or core.bare). The error is
// a *WorkTreeMismatch with the facts.
var ErrWorkTreeMismatch = wire.Sentinel("git_failed", "gitops: git would act on another work tree")

// ErrPinMismatch means a worktree entry is pinned with another token.
var ErrPinMismatch = wire.Sentinel("git_failed", "gitops: worktree entry pinned by someone else")

// A ConfigSetting is one value of a configuration key as git reads it in
// a directory, and where it is set.
type ConfigSetting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Scope  string `json:"scope"`  // system, global, local, worktree, command
	Origin string `json:"origin"` // such as file:/repo/.git/worktrees/ws/config.worktree
}

// A WorkTreeMismatch reports what git, left to itself, resolves in a
// worktree when that differs from what the worktree's .git file names.
type WorkTreeMismatch struct {
	Dir    string // the worktree's top level, as given
	GitDir string // the git directory its .git file names
	// GitTopLevel and GitGitDir are what git resolves when run plainly in
	// Dir. GitTopLevel is empty when git finds no work tree at all
	// (core.bare); Reason then says what git said.
	GitTopLevel string
	GitGitDir   string
	Bare        bool
	Reason      string
	// Settings are the core.worktree and core.bare settings git reads in
	// Dir that can explain the difference (core.bare only when true).
	Settings []ConfigSetting
}

func (e *WorkTreeMismatch) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gitops: git run in %s", e.Dir)
	switch {
	case e.GitTopLevel == "" || e.Bare:
		b.WriteString(" finds no work tree there")
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
	case e.GitTopLevel != e.Dir:
		fmt.Fprintf(&b, " would act on the work tree %s", e.GitTopLevel)
	default:
		fmt.Fprintf(&b, " would use the git directory %s, not %s", e.GitGitDir, e.GitDir)
	}
	for _, s := range e.Settings {
		fmt.Fprintf(&b, "; %s = %s (%s config %s)", s.Key, s.Value, s.Scope, strings.TrimPrefix(s.Origin, "file:"))
	}
	return b.String()
}

func (e *WorkTreeMismatch) Unwrap() error { return ErrWorkTreeMismatch }

// CheckWorkTree checks that git, run in the worktree whose top level is
// worktree WITHOUT being told its git directory and work tree, resolves
// exactly that work tree and the git directory its .git file names, and
// that the repository is not bare there. It costs one git process (and one
// more, to name the settings, when they differ).
//
// Every function of this package that acts on a worktree names both to git
// (see OpenTree), so git cannot be misled into another directory; this
// check is for the caller to refuse, before any effect, a worktree that
// the user's own git would treat as something else: a per-worktree
// core.worktree that aims it at another directory (such as the main
// worktree), or core.bare. Anything else that a worktree's configuration
// could say (core.worktree and core.bare are ignored by git in the
// repository's shared config for linked worktrees) shows up here too,
// since it is git that resolves.
func CheckWorkTree(ctx context.Context, worktree string) error {
	dir, ceiling, err := TopLevel(worktree)
	if err != nil {
		return err
	}
	gitDir, err := WorktreeGitDir(dir)
	if err != nil {
		return err
	}
	m := &WorkTreeMismatch{Dir: dir, GitDir: gitDir}
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, Ceiling: ceiling, plain: true},
		"rev-parse", "--path-format=absolute", "--is-bare-repository", "--absolute-git-dir", "--show-toplevel")
	var ge *Error
	switch {
	case err == nil:
		s, ok := strings.CutSuffix(string(res.Stdout), "\n")
		lines := strings.Split(s, "\n")
		if !ok || len(lines) != 3 || (lines[0] != "true" && lines[0] != "false") {
			return Unexpected("git rev-parse", "want bare, git dir and top level, got %q", res.Stdout)
		}
		m.Bare, m.GitGitDir, m.GitTopLevel = lines[0] == "true", lines[1], lines[2]
		if !m.Bare && samePath(dir, m.GitTopLevel) && samePath(gitDir, m.GitGitDir) {
			return nil
		}
	case errors.Is(err, ErrNotAWorkTree) && errors.As(err, &ge):
		m.Bare, m.Reason = true, strings.TrimPrefix(ge.Stderr, "fatal: ")
	default:
		return err
	}
	m.Settings, _ = workTreeSettings(ctx, dir, ceiling)
	return m
}

// samePath reports whether a and b name the same directory once symbolic
// links are resolved (git reports resolved paths).
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// workTreeSettings lists the core.worktree settings, and the core.bare
// settings that are true, that git reads in dir, with their scope and
// origin.
func workTreeSettings(ctx context.Context, dir, ceiling string) ([]ConfigSetting, error) {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, Ceiling: ceiling, plain: true, OKCodes: []int{1}},
		"config", "-z", "--show-scope", "--show-origin", "--get-regexp", `^core\.(worktree|bare)$`)
	if err != nil {
		return nil, err
	}
	var out []ConfigSetting
	fields := strings.Split(string(res.Stdout), "\x00")
	for i := 0; i+2 < len(fields); i += 3 {
		key, value, _ := strings.Cut(fields[i+2], "\n")
		s := ConfigSetting{Scope: fields[i], Origin: fields[i+1], Key: key, Value: value}
		if key == "core.bare" {
			if v, _ := parseGitBool(value); !v {
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// parseGitBool reads a boolean as git does (true, yes, on, 1 ...).
func parseGitBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "":
		return true, true
	case "false", "no", "off":
		return false, true
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n != 0, true
	}
	return false, false
}

// A WorktreeLock is a linked worktree's lock as git keeps it: the file
// <admin entry>/locked, holding the reason (possibly empty).
type WorktreeLock struct {
	Locked bool
	Reason string // as git reads it: surrounding white space trimmed
}

// ReadWorktreeLock reads the lock of the worktree entry adminDir.
func ReadWorktreeLock(adminDir string) (WorktreeLock, error) {
	b, err := readSmallFile(filepath.Join(adminDir, "locked"))
	if errors.Is(err, fs.ErrNotExist) {
		return WorktreeLock{}, nil
	}
	if err != nil {
		return WorktreeLock{}, err
	}
	return WorktreeLock{Locked: true, Reason: trimGitSpace(string(b))}, nil
}

// WorktreeLockAt reads the lock of the linked worktree whose top level is
// worktree, finding its entry through the worktree's .git file (three
// system calls a file: list reads one per workspace).
func WorktreeLockAt(worktree string) (WorktreeLock, error) {
	b, err := readSmallFile(filepath.Join(worktree, ".git"))
	if err != nil {
		return WorktreeLock{}, err
	}
	gitdir, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "gitdir: ")
	if !ok || gitdir == "" {
		return WorktreeLock{}, fmt.Errorf("%w: %s is not a gitdir file", ErrNotARepository, filepath.Join(worktree, ".git"))
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(worktree, gitdir)
	}
	return ReadWorktreeLock(gitdir)
}

// trimGitSpace trims what git's strbuf_trim does.
func trimGitSpace(s string) string { return strings.Trim(s, " \t\n\r") }

// A LockedError is a worktree entry locked with another reason than the
// one a caller may lift.
type LockedError struct {
	AdminDir string
	Reason   string // the lock's reason; empty for a lock without one
}

func (e *LockedError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("gitops: worktree entry %s is locked (without a reason)", e.AdminDir)
	}
	return fmt.Sprintf("gitops: worktree entry %s is locked: %s", e.AdminDir, e.Reason)
}

func (e *LockedError) Unwrap() error { return ErrWorktreeLocked }

// UnlockWorktreeIf lifts the lock of the worktree entry adminDir only if
// its reason is exactly reason (git's `worktree unlock` lifts any lock). A
// lock with another reason, or none, is left in place and reported as a
// *LockedError (errors.Is ErrWorktreeLocked). An entry that is not locked
// is fine as it is.
//
// The lock file is first renamed aside, in one step, and its reason read
// again there: a lock someone put in its place after the first read is
// restored rather than lifted.
func UnlockWorktreeIf(adminDir, reason string) error {
	cur, err := ReadWorktreeLock(adminDir)
	if err != nil || !cur.Locked {
		return err
	}
	if cur.Reason != reason {
		return &LockedError{AdminDir: adminDir, Reason: cur.Reason}
	}
	lock := filepath.Join(adminDir, "locked")
	aside := fmt.Sprintf("%s.majlis-unlock-%d-%d", lock, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(lock, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // unlocked meanwhile
		}
		return err
	}
	b, err := os.ReadFile(aside)
	if err != nil || trimGitSpace(string(b)) != reason {
		if rerr := os.Rename(aside, lock); rerr != nil {
			return errors.Join(err, rerr)
		}
		if err != nil {
			return err
		}
		return &LockedError{AdminDir: adminDir, Reason: trimGitSpace(string(b))}
	}
	return os.Remove(aside)
}

// pinFile is the name of the entry pin in a worktree entry: the digest of
// the claim that made the entry (WriteEntryPin, ReadEntryPin,
// ReadWorktreePin, EntriesPinnedWith). It is not a Pin, which is a commit
// a worktree holds (salvage.Survey).
const pinFile = "majlis-claim"

// WriteEntryPin writes token into the worktree entry adminDir (the file
// majlis-claim), durably and without ever replacing one: an entry already
// pinned with token is fine, one pinned with another token gives
// ErrPinMismatch. git deletes the pin with the entry, so an entry that
// git makes later at the same place (same name, same path) has none.
func WriteEntryPin(adminDir, token string) error {
	if token == "" || strings.ContainsAny(token, "\n\x00") {
		return errors.New("gitops: a pin is one line")
	}
	name := filepath.Join(adminDir, pinFile)
	err := durable.Publish(adminDir, pinFile, []byte(token+"\n"))
	if !errors.Is(err, durable.ErrExists) {
		return err
	}
	got, rerr := ReadEntryPin(adminDir)
	if rerr != nil {
		return rerr
	}
	if got != token {
		return fmt.Errorf("%w: %s holds %q", ErrPinMismatch, name, got)
	}
	return nil
}

// ReadEntryPin returns the token the worktree entry adminDir is pinned
// with; an entry without a pin gives an error satisfying
// errors.Is(err, fs.ErrNotExist).
func ReadEntryPin(adminDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(adminDir, pinFile))
	if err != nil {
		return "", err
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok || s == "" || strings.ContainsAny(s, "\n\x00") {
		return "", Unexpected(filepath.Join(adminDir, pinFile), "not one line: %q", b)
	}
	return s, nil
}

// ReadWorktreePin returns the entry pin of the worktree whose top level
// is dir, read through its .git file; a directory that is not a linked worktree, or
// whose entry has no pin, gives an error.
func ReadWorktreePin(dir string) (string, error) {
	gitDir, err := WorktreeGitDir(dir)
	if err != nil {
		return "", err
	}
	return ReadEntryPin(gitDir)
}

// WorktreeEntries returns the administrative entries
// (<common dir>/worktrees/<id>) whose back-pointer (gitdir) names
// <path>/.git for one of paths. git keeps the entry of a worktree whose
// directory is gone until it is pruned; this finds it without the
// directory. It reads the entries in process.
func WorktreeEntries(commonDir string, paths ...string) ([]string, error) {
	root := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[filepath.Join(filepath.Clean(p), ".git")] = true
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := readSmallFile(filepath.Join(root, e.Name(), "gitdir"))
		if err != nil {
			continue // not an entry, or one still being written: not the path's
		}
		if p := strings.TrimRight(string(b), "\n"); filepath.IsAbs(p) && want[filepath.Clean(p)] {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}

// A PinnedEntry is an administrative entry carrying a given pin, and the
// work tree its back-pointer (gitdir) names now.
type PinnedEntry struct {
	Dir      string // <common dir>/worktrees/<id>
	WorkTree string // the directory gitdir names, "" when it cannot be read
}

// EntriesPinnedWith returns every administrative entry of commonDir pinned
// with token, wherever its worktree is now: one that `git worktree move`
// or `git worktree repair` pointed elsewhere is still the same entry. It
// reads the entries in process.
func EntriesPinnedWith(commonDir, token string) ([]PinnedEntry, error) {
	root := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PinnedEntry
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if pin, err := ReadEntryPin(dir); err != nil || pin != token {
			continue
		}
		pe := PinnedEntry{Dir: dir}
		if b, err := readSmallFile(filepath.Join(dir, "gitdir")); err == nil {
			if p := strings.TrimRight(string(b), "\n"); filepath.IsAbs(p) {
				pe.WorkTree = filepath.Dir(filepath.Clean(p))
			}
		}
		out = append(out, pe)
	}
	return out, nil
}
