// Package githook installs the git pre-commit hook that runs 'majlis
// check' before every commit. It belongs to the command line: the hook
// runs the majlis executable, and what it checks is admission's.
package githook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/admission"
	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/durable"
)

// The hook Install writes, and where Force moves a hook that majlis
// did not write.
const (
	HookName       = "pre-commit"
	HookBackupName = "pre-commit.majlis-backup"
)

// Options configure Install.
type Options struct {
	// Dir is a directory inside the worktree whose hooks to install; empty
	// means the working directory. Git decides where the hooks are
	// (core.hooksPath, else the repository's common hooks folder, shared
	// by all its worktrees).
	Dir string
	// Majlis is the absolute path of the majlis executable the hook runs.
	// When that file is no longer executable at commit time, the hook runs
	// majlis from PATH. Empty: majlis from PATH.
	Majlis string
	// Force moves a pre-commit hook that majlis did not write to
	// HookBackupName, which the majlis hook then runs first, instead of
	// refusing. An existing backup is never overwritten.
	Force bool
}

// A Result reports an installed hook.
type Result struct {
	Path     string `json:"path"`      // the hook file
	HooksDir string `json:"hooks_dir"` // where git looks for hooks
	Majlis   string `json:"majlis"`    // the executable the hook runs ("majlis": found on PATH)
	// Changed is false when this very hook was installed already.
	Changed bool `json:"changed"`
	// Backup is where Force moved the hook that was there before.
	Backup string `json:"backup,omitempty"`
}

// Install installs a pre-commit hook that runs `majlis check
// --if-holder` before every commit, so that changes outside the committing
// task's leases are reported, and refused when the enforcement_gap policy
// is block. Installing again replaces a hook majlis wrote (unchanged when
// identical); a pre-commit hook majlis did not write, or one edited since,
// is never overwritten: ErrHookExists, unless Force moves it to
// HookBackupName first.
func Install(ctx context.Context, o Options) (*Result, error) {
	const op = "hook"
	exe := o.Majlis
	switch {
	case exe == "":
		exe = "majlis"
	case !filepath.IsAbs(exe) || strings.ContainsAny(exe, "\n\r\x00"):
		return nil, &admission.Error{Op: op, Path: exe, Err: admission.ErrInvalid, Reason: "the majlis executable must be an absolute path on one line"}
	}
	dir, err := gitops.HooksDir(ctx, o.Dir)
	if err != nil {
		return nil, &admission.Error{Op: op, Path: o.Dir, Err: admission.ErrInvalid, Reason: "cannot locate the hooks folder: " + err.Error(),
			Hint: "run it inside a worktree of the repository", Details: map[string]any{"argument": "repository"}}
	}
	path := filepath.Join(dir, HookName)
	want := hookScript(exe)
	res := &Result{Path: path, HooksDir: dir, Majlis: exe}
	if err := durable.MkdirAll(dir, 0o755); err != nil {
		return nil, &admission.Error{Op: op, Path: dir, Err: err}
	}

	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeHook(dir, path, want, false); err != nil {
			if errors.Is(err, durable.ErrExists) {
				return nil, &admission.Error{Op: op, Path: path, Err: admission.ErrHookExists, Reason: path + " appeared while majlis was installing its hook",
					Hint: "look at what wrote it, then install again"}
			}
			return nil, &admission.Error{Op: op, Path: path, Err: err}
		}
		res.Changed = true
		return res, nil
	case err != nil:
		return nil, &admission.Error{Op: op, Path: path, Err: err}
	}
	if fi.Mode().IsRegular() {
		have, err := os.ReadFile(path)
		if err != nil {
			return nil, &admission.Error{Op: op, Path: path, Err: err}
		}
		if isMajlisHook(have) {
			if bytes.Equal(have, want) && fi.Mode().Perm()&0o100 != 0 {
				return res, nil
			}
			if err := writeHook(dir, path, want, true); err != nil {
				return nil, &admission.Error{Op: op, Path: path, Err: err}
			}
			res.Changed = true
			return res, nil
		}
	}

	// Someone else's hook (or one edited since majlis wrote it).
	backup := filepath.Join(dir, HookBackupName)
	if !o.Force {
		return nil, &admission.Error{Op: op, Path: path, Err: admission.ErrHookExists,
			Reason: path + " was not written by majlis (or was edited since); it is left as it is",
			Hint: fmt.Sprintf("have the install move it to %s (the majlis hook runs it first), or call majlis's check from it yourself",
				HookBackupName)}
	}
	// A hard link, not a copy: the backup is the very file (or symbolic
	// link), and an existing backup is never replaced.
	if err := os.Link(path, backup); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &admission.Error{Op: op, Path: backup, Err: admission.ErrHookExists,
				Reason: path + " was not written by majlis, and " + backup + " exists already; both are left as they are",
				Hint:   "move " + backup + " aside (or merge the two hooks), then install again", Details: map[string]any{"backup": backup}}
		}
		return nil, &admission.Error{Op: op, Path: backup, Err: err}
	}
	if err := durable.SyncDir(dir); err != nil {
		return nil, &admission.Error{Op: op, Path: dir, Err: err}
	}
	if err := writeHook(dir, path, want, true); err != nil {
		return nil, &admission.Error{Op: op, Path: path, Err: err}
	}
	res.Changed, res.Backup = true, backup
	return res, nil
}

// hookTemplate is the pre-commit hook. Its second line marks it as
// majlis's; the majlis= line records the executable. A hook is majlis's
// only when it is this template with some executable (isMajlisHook), so
// that an edited hook is never overwritten.
const hookTemplate = `#!/bin/sh
# majlis-hook: pre-commit v1
# Written by 'majlis hook install', which replaces it when run again.
# Before each commit it runs 'majlis check --if-holder': changed files
# outside the leases of the committing task are reported, and the commit is
# refused when the policy enforcement_gap is block. A hook that was here
# before, moved aside by 'majlis hook install --force', runs first (once:
# MAJLIS_HOOK_CHAINED keeps a backup that is itself a majlis hook from
# running itself again).
backup="$(dirname "$0")/` + HookBackupName + `"
if [ -z "$MAJLIS_HOOK_CHAINED" ] && [ -x "$backup" ]; then
	MAJLIS_HOOK_CHAINED=1 "$backup" "$@" || exit $?
fi
majlis=%s
case $majlis in
/*) [ -x "$majlis" ] || majlis=majlis ;;
esac
if ! command -v "$majlis" >/dev/null 2>&1; then
	echo "majlis pre-commit hook: majlis is not installed; install it, or remove $0" >&2
	exit 1
fi
exec "$majlis" check --if-holder
`

func hookScript(exe string) []byte {
	return fmt.Appendf(nil, hookTemplate, shellQuote(exe))
}

// isMajlisHook reports whether b is the hook majlis writes, for any
// recorded executable.
func isMajlisHook(b []byte) bool {
	have := strings.Split(string(b), "\n")
	want := strings.Split(string(hookScript("majlis")), "\n")
	if len(have) != len(want) {
		return false
	}
	for i := range want {
		if strings.HasPrefix(want[i], "majlis=") {
			if !strings.HasPrefix(have[i], "majlis='") || !strings.HasSuffix(have[i], "'") {
				return false
			}
			continue
		}
		if have[i] != want[i] {
			return false
		}
	}
	return true
}

// shellQuote quotes s for sh: in single quotes, each single quote in s
// closing the quotes, escaped, and opening them again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeHook writes data, executable, to path durably (internal/durable):
// replacing it, or not clobbering it (durable.ErrExists when path exists).
func writeHook(dir, path string, data []byte, replace bool) error {
	if replace {
		return durable.Replace(dir, filepath.Base(path), data, durable.Perm(0o755))
	}
	return durable.Publish(dir, filepath.Base(path), data, durable.Perm(0o755))
}
