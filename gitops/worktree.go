package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// A Worktree is one entry of `git worktree list --porcelain -z`. The first
// entry git lists is always the main worktree.
type Worktree struct {
	Path     string // absolute path of the worktree's top level
	Head     string // commit id checked out; all zeros on an unborn branch, empty for a bare repository
	Branch   string // full ref name (refs/heads/...) checked out; empty when detached, bare or unreadable
	Detached bool   // HEAD is detached
	Bare     bool   // the entry is a bare repository (no files)
	// Locked is set when the worktree is locked against pruning and
	// removal; LockReason is the reason given, possibly empty.
	Locked     bool
	LockReason string
	// Prunable is set when git would prune the entry (its directory is
	// gone); PrunableReason says why.
	Prunable       bool
	PrunableReason string
}

// addRetryingPartial runs add, a `git worktree add` of path, again when
// git died on a sibling's worktree entry that a concurrent add is still
// writing: only when it died before creating anything of ours (nothing
// at path, and clear, when given, says what it left is gone), up to 20
// times with a growing pause.
func addRetryingPartial(ctx context.Context, path string, add func() error, clear func() bool) error {
	for attempt := 0; ; attempt++ {
		err := add()
		var ge *Error
		if err == nil || attempt >= 20 || !errors.As(err, &ge) || !partialWorktreeEntry(ge.Stderr) {
			return err
		}
		if _, serr := os.Lstat(path); !errors.Is(serr, os.ErrNotExist) {
			return err
		}
		if clear != nil && !clear() {
			return err
		}
		if testHookPartialEntry != nil {
			testHookPartialEntry(attempt)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(10+attempt*5) * time.Millisecond):
		}
	}
}

// checkoutOpts are the options and first arguments of a `git worktree
// add` that checks files out: quiet, unless ctx asks for git's progress
// (WithProgress).
func checkoutOpts(ctx context.Context) (Cmd, []string) {
	if w := progressTo(ctx); w != nil {
		return Cmd{progress: w}, []string{"worktree", "add"}
	}
	return Cmd{}, []string{"worktree", "add", "--quiet"}
}

// removeBranchAt makes sure ref does not exist, deleting it only if it
// points at commit (a full object id: as a failed `worktree add -b` left
// it). It reports whether ref is absent afterwards.
func removeBranchAt(ctx context.Context, dir, ref, commit string) bool {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, OKCodes: []int{1}}, "rev-parse", "-q", "--verify", ref)
	if err != nil {
		return false
	}
	if res.Code == 1 {
		return true
	}
	if strings.TrimSuffix(string(res.Stdout), "\n") != commit {
		return false
	}
	return DeleteRef(ctx, dir, ref, commit) == nil
}

// deleteCreatedBranch deletes ref if it exists, at the value it has now.
func deleteCreatedBranch(ctx context.Context, dir, ref string) error {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, OKCodes: []int{1}}, "rev-parse", "-q", "--verify", ref)
	if err != nil || res.Code == 1 {
		return err
	}
	return DeleteRef(ctx, dir, ref, strings.TrimSuffix(string(res.Stdout), "\n"))
}

// ListWorktrees returns every worktree of the repository containing dir,
// main worktree first, as `git worktree list --porcelain -z` reports them.
// Output that does not parse strictly is an error wrapping
// ErrUnexpectedOutput: callers use this list to find peers whose files must
// not be touched, so an attribute this code does not know (a future git)
// refuses rather than being skipped.
//
// git fails when it meets an entry that a concurrent `git worktree add` is
// still writing ("failed to read worktrees/<id>/commondir"); such a
// failure is retried for up to about a second.
func ListWorktrees(ctx context.Context, dir string) ([]Worktree, error) {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true}, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	return parseWorktreeList(res.Stdout)
}

// RemoveWorktree removes the linked worktree at path
// (`git worktree remove [--force] -- path`). Without force git refuses a
// worktree with modified or untracked files (ErrWorktreeDirty); ignored
// files are removed either way. A locked worktree is refused
// (ErrWorktreeLocked) even with force: unlock it first, deliberately.
func RemoveWorktree(ctx context.Context, dir, path string, force bool) error {
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	args = append(args, "--", path)
	_, err := Run(ctx, dir, Cmd{}, args...)
	err = classify(err, ErrWorktreeLocked, "cannot remove a locked working tree")
	err = classify(err, ErrWorktreeDirty, "contains modified or untracked files")
	return err
}

// LockWorktree locks the worktree at path with reason (possibly empty).
func LockWorktree(ctx context.Context, dir, path, reason string) error {
	args := []string{"worktree", "lock"}
	if reason != "" {
		args = append(args, "--reason", reason)
	}
	_, err := Run(ctx, dir, Cmd{retryPartial: true}, append(args, "--", path)...)
	return err
}

// UnlockWorktree unlocks the worktree at path.
func UnlockWorktree(ctx context.Context, dir, path string) error {
	_, err := Run(ctx, dir, Cmd{retryPartial: true}, "worktree", "unlock", "--", path)
	return err
}

// parseWorktreeList parses `git worktree list --porcelain -z`: records of
// NUL-terminated attributes, each record ended by an empty attribute. The
// attributes must come in git's order: worktree, then bare or HEAD, then
// branch or detached, then locked, then prunable.
func parseWorktreeList(out []byte) ([]Worktree, error) {
	var list []Worktree
	for len(out) > 0 {
		var attrs []string
		for {
			i := bytes.IndexByte(out, 0)
			if i < 0 {
				return nil, Unexpected("git worktree list", "record %d is not NUL-terminated", len(list)+1)
			}
			attr := string(out[:i])
			out = out[i+1:]
			if attr == "" {
				break
			}
			attrs = append(attrs, attr)
		}
		w, err := parseWorktreeRecord(attrs)
		if err != nil {
			return nil, fmt.Errorf("%w (record %d)", err, len(list)+1)
		}
		list = append(list, w)
	}
	return list, nil
}

// worktree record attributes, in the order git prints them.
const (
	wtPath = iota
	wtBare
	wtHead
	wtBranch
	wtLocked
	wtPrunable
)

func parseWorktreeRecord(attrs []string) (Worktree, error) {
	var w Worktree
	if len(attrs) == 0 {
		return w, Unexpected("git worktree list", "empty record")
	}
	last := -1
	for i, a := range attrs {
		key, val, hasVal := strings.Cut(a, " ")
		var pos int
		switch key {
		case "worktree":
			pos = wtPath
			if !hasVal || val == "" {
				return w, Unexpected("git worktree list", "worktree without a path")
			}
			w.Path = val
		case "bare":
			pos = wtBare
			w.Bare = true
		case "HEAD":
			pos = wtHead
			if !IsObjectID(val) {
				return w, Unexpected("git worktree list", "HEAD %q is not an object id", val)
			}
			w.Head = val
		case "branch":
			pos = wtBranch
			if !strings.HasPrefix(val, "refs/") || len(val) == len("refs/") {
				return w, Unexpected("git worktree list", "branch %q is not a full ref name", val)
			}
			w.Branch = val
		case "detached":
			pos = wtBranch
			w.Detached = true
		case "locked":
			pos = wtLocked
			w.Locked, w.LockReason = true, val
			if hasVal && val == "" {
				return w, Unexpected("git worktree list", "locked with an empty reason")
			}
		case "prunable":
			pos = wtPrunable
			w.Prunable, w.PrunableReason = true, val
			if hasVal && val == "" {
				return w, Unexpected("git worktree list", "prunable with an empty reason")
			}
		default:
			return w, Unexpected("git worktree list", "unknown attribute %q", a)
		}
		if (i == 0) != (pos == wtPath) {
			return w, Unexpected("git worktree list", "record does not start with its worktree path")
		}
		if pos <= last {
			return w, Unexpected("git worktree list", "attribute %q repeated or out of order", key)
		}
		if !hasVal && (pos == wtPath || pos == wtHead || pos == wtBranch && !w.Detached) {
			return w, Unexpected("git worktree list", "attribute %q without a value", key)
		}
		if hasVal && (key == "bare" || key == "detached") {
			return w, Unexpected("git worktree list", "attribute %q with a value", key)
		}
		last = pos
	}
	if w.Bare == (w.Head != "") {
		return w, Unexpected("git worktree list", "worktree %q must have either bare or HEAD", w.Path)
	}
	if w.Bare && (w.Detached || w.Branch != "") {
		return w, Unexpected("git worktree list", "bare worktree %q with a branch", w.Path)
	}
	return w, nil
}

// appendWorktreeRecord is the inverse of parseWorktreeRecord: it renders w
// as git does, which the fuzz test uses to check that parsing loses
// nothing.
func appendWorktreeRecord(b []byte, w Worktree) []byte {
	b = append(b, "worktree "+w.Path+"\x00"...)
	if w.Bare {
		b = append(b, "bare\x00"...)
	} else {
		b = append(b, "HEAD "+w.Head+"\x00"...)
	}
	switch {
	case w.Detached:
		b = append(b, "detached\x00"...)
	case w.Branch != "":
		b = append(b, "branch "+w.Branch+"\x00"...)
	}
	if w.Locked {
		b = appendOptional(b, "locked", w.LockReason)
	}
	if w.Prunable {
		b = appendOptional(b, "prunable", w.PrunableReason)
	}
	return append(b, 0)
}

func appendOptional(b []byte, key, val string) []byte {
	b = append(b, key...)
	if val != "" {
		b = append(b, ' ')
		b = append(b, val...)
	}
	return append(b, 0)
}

// IsObjectID reports whether s is a full lowercase object id (SHA-1 or
// SHA-256).
func IsObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
