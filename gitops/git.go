package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/majlis-dev/majlis/wire"
)

// Sentinel errors that callers branch on. Each is wrapped by an *Error (or
// returned as is where no git process was involved), so test with
// errors.Is.
var (
	// ErrNotARepository means the path is not inside a Git repository, or a
	// worktree's .git file points nowhere.
	ErrNotARepository = wire.Sentinel("git_failed", "gitops: not a git repository")

	// ErrNotAWorkTree means the path is inside a repository but not inside a
	// work tree (a bare repository, or a git directory).
	ErrNotAWorkTree = wire.Sentinel("git_failed", "gitops: not inside a work tree")

	// ErrNotTopLevel means a function that acts on a whole worktree was given a
	// directory that is not the top level of one (it has no .git entry).
	// Running git there would silently act on an enclosing repository.
	ErrNotTopLevel = wire.Sentinel("git_failed", "gitops: not the top level of a worktree")

	// ErrUnknownRevision means a revision does not name a commit.
	ErrUnknownRevision = wire.Sentinel("git_failed", "gitops: unknown revision")

	// ErrRefExists means a create-only ref update found the ref already there.
	ErrRefExists = wire.Sentinel("git_failed", "gitops: reference already exists")

	// ErrRefChanged means a ref update or deletion with an expected old value
	// found the ref at another value, or missing.
	ErrRefChanged = wire.Sentinel("git_failed", "gitops: reference is not at the expected value")

	// ErrBranchExists means a worktree was to create a branch that already exists.
	ErrBranchExists = wire.Sentinel("git_failed", "gitops: branch already exists")

	// ErrPathExists means a worktree was to be created at a path that already
	// exists or is registered as a (missing) worktree.
	ErrPathExists = wire.Sentinel("git_failed", "gitops: worktree path already exists")

	// ErrWorktreeLocked means a locked worktree cannot be removed; unlock it first.
	ErrWorktreeLocked = wire.Sentinel("git_failed", "gitops: worktree is locked")

	// ErrWorktreeDirty means a worktree with modified or untracked files cannot
	// be removed without force.
	ErrWorktreeDirty = wire.Sentinel("git_failed", "gitops: worktree has modified or untracked files")

	// ErrUnexpectedOutput means git printed something the strict parsers do not
	// accept. Nothing is guessed from output that does not parse.
	ErrUnexpectedOutput = wire.Sentinel("git_failed", "gitops: unexpected git output")
)

// An Error is a failed git command. It records what ran, where, how it
// ended and what git said, and unwraps to a sentinel above when the failure
// is one callers branch on (or to the context or exec error when git did
// not run to completion).
type Error struct {
	Dir      string   // the directory given to git -C
	Args     []string // the arguments after -C Dir
	ExitCode int      // git's exit status; -1 when it did not run or was killed
	Stderr   string   // what git printed on stderr, trimmed
	Err      error    // the classification, if any; see Unwrap
}

// Error says what git said and where, in words: the command line itself
// (Command) is for logs and the JSON error's details, never for a person.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("git")
	if e.Dir != "" {
		fmt.Fprintf(&b, " in %s", e.Dir)
	}
	switch {
	case e.ExitCode >= 0:
		fmt.Fprintf(&b, " failed with exit status %d", e.ExitCode)
	case e.Err != nil:
		fmt.Fprintf(&b, " did not complete: %v", e.Err)
	default:
		b.WriteString(" failed")
	}
	if e.Stderr != "" {
		b.WriteString(": ")
		b.WriteString(e.Stderr)
	}
	return b.String()
}

// Command is the git command line that failed, quoted for a log.
func (e *Error) Command() string { return shellQuote(append([]string{"git"}, e.Args...)) }

// Unwrap returns the sentinel that classifies the failure, or the
// underlying error when git could not be run or was stopped.
func (e *Error) Unwrap() error { return e.Err }

// shellQuote renders a command line for messages, quoting (with Go's
// syntax) only the arguments that need it, so that spaces, empty
// arguments and newlines are visible.
func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' || r == '^' || r == '{' || r == '}' || r == '@' ||
				r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteString(strconv.Quote(a))
	}
	return b.String()
}

// strippedEnv lists the variables that would point git at another
// repository, index or object store than the one -C names, or change how
// pathspecs are read. They leak in when majlis runs from a git hook or
// alias; git must rediscover everything from the directory instead.
var strippedEnv = map[string]bool{
	"GIT_DIR":                          true,
	"GIT_WORK_TREE":                    true,
	"GIT_INDEX_FILE":                   true,
	"GIT_COMMON_DIR":                   true,
	"GIT_OBJECT_DIRECTORY":             true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_NAMESPACE":                    true,
	"GIT_QUARANTINE_PATH":              true,
	"GIT_PREFIX":                       true,
	"GIT_LITERAL_PATHSPECS":            true,
	"GIT_GLOB_PATHSPECS":               true,
	"GIT_NOGLOB_PATHSPECS":             true,
	"GIT_ICASE_PATHSPECS":              true,
}

// A Cmd tunes one git invocation (see Run). The zero Cmd runs a command
// that may write, in dir as git finds it, with git's own exit statuses.
type Cmd struct {
	// ReadOnly sets GIT_OPTIONAL_LOCKS=0 so that a read-only command
	// (status) never refreshes and rewrites the index behind the caller.
	ReadOnly bool
	// IndexFile, when set, is exported as GIT_INDEX_FILE: the salvage
	// recipe works on a private copy of the index.
	IndexFile string
	// Ceiling, when set, is exported as GIT_CEILING_DIRECTORIES (replacing
	// any inherited value) so that git cannot walk up from -C into an
	// enclosing repository. Commands that act on a whole worktree set it
	// to the parent of the worktree's top level; Run then names that
	// worktree's git directory and work tree too (GitDir, WorkTree).
	Ceiling string
	// LiteralPathspecs makes every pathspec a literal path.
	LiteralPathspecs bool
	// progress, when set, receives git's progress meter lines from its
	// stderr (see WithProgress); the command must not be run --quiet.
	progress io.Writer
	// OKCodes are non-zero exit statuses that are answers, not failures
	// (git check-ignore exits 1 for "not ignored").
	OKCodes []int
	// retryPartial retries a command that is not read-only but fails
	// before it acts when it meets a half-written worktree entry (worktree
	// lock and unlock).
	retryPartial bool
	// Env is appended to the child's environment.
	Env []string
	// refreshIndex lets a read-only command take git's optional locks, so
	// that status refreshes the index's stat cache as a plain `git status`
	// does (see StatusOptions.Refresh).
	refreshIndex bool
	// GitDir and WorkTree, when set, are exported as GIT_DIR and
	// GIT_WORK_TREE: git then acts on exactly that git directory and work
	// tree, whatever core.worktree or core.bare say (see OpenTree).
	GitDir, WorkTree string
	// plain runs git as the user would, left to itself: it discovers the
	// git directory and work tree from dir even when Ceiling is set (see
	// CheckWorkTree).
	plain bool
	// Stdin, when set, is the command's standard input (object ids for
	// cat-file and rev-list, paths for update-index).
	Stdin []byte
	// Stdout, when set, receives the command's standard output as git
	// writes it (Result.Stdout is then empty), for output too large to
	// hold; such a command is never run again.
	Stdout io.Writer
}

// A Result is the outcome of a git command that did not fail.
type Result struct {
	Stdout []byte // what git wrote on its standard output (unless Cmd.Stdout took it)
	Code   int    // 0, or the Cmd.OKCodes status git exited with
}

// maxStderr bounds how much of git's stderr an Error keeps.
const maxStderr = 64 << 10

// environ builds the environment for a git child: the inherited one
// (which carries HOME, and so the user's global config and
// core.excludesFile) minus strippedEnv, plus a stable locale and no
// prompts or pagers.
func environ(o Cmd) []string {
	inherited := os.Environ()
	env := make([]string, 0, len(inherited)+8)
	for _, kv := range inherited {
		k, _, _ := strings.Cut(kv, "=")
		if strippedEnv[k] || k == "LC_ALL" || k == "GIT_TERMINAL_PROMPT" || k == "GIT_PAGER" || k == "GIT_OPTIONAL_LOCKS" ||
			k == "GIT_CEILING_DIRECTORIES" && o.Ceiling != "" {
			continue
		}
		env = append(env, kv)
	}
	// LC_ALL=C keeps messages in English, which the classification of
	// failures below depends on.
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
	if o.ReadOnly && !o.refreshIndex {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	if o.IndexFile != "" {
		env = append(env, "GIT_INDEX_FILE="+o.IndexFile)
	}
	if o.Ceiling != "" {
		env = append(env, "GIT_CEILING_DIRECTORIES="+o.Ceiling)
	}
	if o.LiteralPathspecs {
		env = append(env, "GIT_LITERAL_PATHSPECS=1")
	}
	if o.GitDir != "" && o.WorkTree != "" {
		env = append(env, "GIT_DIR="+o.GitDir, "GIT_WORK_TREE="+o.WorkTree)
	}
	env = append(env, o.Env...)
	return env
}

// gitBinary is the git executable; tests never replace it (git is never
// mocked), but a missing git must fail with a clear error.
const gitBinary = "git"

// Run runs `git -C dir args...`; it is the one place that starts git. A
// non-zero exit that is not listed in o.OKCodes, or a failure to run, is
// returned as an *Error carrying the arguments, exit status and stderr;
// generic classifications (not a repository, directory missing) are
// applied here, command-specific ones by the caller.
func Run(ctx context.Context, dir string, o Cmd, args ...string) (Result, error) {
	// A ceiling marks a command that acts on the worktree whose top level
	// is dir: it always names that worktree's git directory and work tree
	// (see OpenTree), so that core.worktree or core.bare in the worktree's
	// own config cannot aim it at another directory.
	if o.Ceiling != "" && o.GitDir == "" && !o.plain {
		gitDir, err := WorktreeGitDir(dir)
		if err != nil {
			return Result{}, err
		}
		o.GitDir, o.WorkTree = gitDir, dir
	}
	// A concurrent `git worktree add` writes its administrative entry in
	// steps, and git commands that enumerate worktrees meanwhile die with
	// "failed to read .../worktrees/<id>/commondir". Commands that change
	// nothing (read-only, or o.retryPartial: they fail before acting) are
	// run again after a moment, for up to about a second.
	for attempt := 0; ; attempt++ {
		res, err := gitOnce(ctx, dir, o, args...)
		var ge *Error
		if err == nil || attempt >= 100 || !(o.ReadOnly || o.retryPartial) || o.Stdout != nil ||
			!errors.As(err, &ge) || !partialWorktreeEntry(ge.Stderr) {
			return res, err
		}
		if testHookPartialEntry != nil {
			testHookPartialEntry(attempt)
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// testHookPartialEntry, set only by tests, runs each time Run is about
// to retry a command that met a half-written worktree entry, so that a
// test can finish the entry exactly then instead of guessing a moment.
var testHookPartialEntry func(attempt int)

// partialWorktreeEntry recognises git failing on a worktree entry that a
// concurrent `git worktree add` has not finished writing.
func partialWorktreeEntry(stderr string) bool {
	return strings.Contains(stderr, "failed to read") && strings.Contains(stderr, "worktrees/") &&
		strings.Contains(stderr, "commondir")
}

func gitOnce(ctx context.Context, dir string, o Cmd, args ...string) (Result, error) {
	full := make([]string, 0, len(args)+4)
	full = append(full, "-C", dir)
	if o.WorkTree != "" && !o.plain && caseSensitive(o.WorkTree) {
		// core.ignorecase=true on a case-sensitive file system (a
		// repository copied from macOS or Windows) makes git take an
		// untracked A.txt for the tracked a.txt and list neither: a
		// salvage would miss it, and the removal delete it.
		full = append(full, "-c", "core.ignorecase=false")
	}
	if o.WorkTree != "" && !o.plain {
		// A file-system monitor (core.fsmonitor: a hook or git's daemon)
		// that stopped watching or missed an event makes git trust index
		// entries whose files changed: status would not show the edit, and
		// a salvage's git add would not record it. majlis looks at the
		// files themselves, at the price of a full scan.
		full = append(full, "-c", "core.fsmonitor=false")
		// core.trustctime=false or core.checkStat=minimal make git trust a
		// file whose size and modification time match its index entry: an
		// edit that kept the size and put the time back (touch -r, cp -p,
		// rsync -t) would be missed. The change time catches it.
		full = append(full, "-c", "core.trustctime=true", "-c", "core.checkStat=default")
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, gitBinary, full...)
	cmd.Env = environ(o)
	if o.Stdin != nil {
		cmd.Stdin = bytes.NewReader(o.Stdin)
	}
	// Stop rather than kill on cancellation (stopChild): git removes its
	// lock files (index.lock, ref locks) on SIGTERM, but not on SIGKILL.
	// Then wait for it to exit, however long that takes: a WaitDelay would
	// SIGKILL it once expired. (A person who cannot wait presses Ctrl-C
	// again, which ends majlis and, on a terminal, git with it.)
	cmd.Cancel = func() error { return stopChild(cmd.Process) }
	cmd.WaitDelay = 0
	var stdout bytes.Buffer
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stdout = &stdout
	if o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	cmd.Stderr = stderr
	var split *progressSplit
	if o.progress != nil {
		split = &progressSplit{progress: o.progress, rest: stderr}
		cmd.Stderr = split
	}
	err := cmd.Run()
	if split != nil {
		split.flush()
	}
	if err == nil {
		return Result{Stdout: stdout.Bytes()}, nil
	}
	e := &Error{Dir: dir, Args: args, ExitCode: -1, Stderr: strings.TrimSpace(stderr.String())}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		e.Err = ctx.Err()
	case errors.As(err, &exit) && exit.Exited():
		e.ExitCode = exit.ExitCode()
		for _, c := range o.OKCodes {
			if c == e.ExitCode {
				return Result{Stdout: stdout.Bytes(), Code: c}, nil
			}
		}
		e.Err = classifyCommon(e.Stderr)
	default:
		e.Err = err
	}
	return Result{}, e
}

// stopChild asks a child (git, or a hook it would run) to end, by SIGTERM,
// on which git removes its lock files and exits as on SIGINT. Not SIGINT:
// a process that a shell without job control started in the background
// (a script's 'majlis serve &') inherits SIGINT ignored, and so does every
// child it starts; git would never see the interruption, and majlis would
// wait for it for ever.
func stopChild(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// caseSensitive reports whether the directory holding the worktree's top
// level tells names apart by case, without writing to it: every worktree
// has a .git there, so .GIT is either the same file (case folded), another
// file, or absent. Anything else (no .git, an error) is "not known", and
// git's own setting stands.
func caseSensitive(workTree string) bool {
	lower, err := os.Lstat(filepath.Join(workTree, ".git"))
	if err != nil {
		return false
	}
	upper, err := os.Lstat(filepath.Join(workTree, ".GIT"))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && !os.SameFile(lower, upper)
}

// classifyCommon recognises failures that any command can have.
func classifyCommon(stderr string) error {
	switch {
	case strings.HasPrefix(stderr, "fatal: not a git repository"):
		return ErrNotARepository
	case strings.Contains(stderr, "fatal: this operation must be run in a work tree"):
		return ErrNotAWorkTree
	case strings.HasPrefix(stderr, "fatal: cannot change to ") && strings.HasSuffix(stderr, "No such file or directory"):
		return fs.ErrNotExist
	}
	return nil
}

// classify sets e.Err to sentinel when err is an *Error, not yet
// classified, whose stderr contains one of the fragments, and returns err. Classification relies on
// LC_ALL=C, which every git child runs under.
func classify(err error, sentinel error, fragments ...string) error {
	var e *Error
	if !errors.As(err, &e) || e.ExitCode < 0 || e.Err != nil {
		return err
	}
	for _, f := range fragments {
		if strings.Contains(e.Stderr, f) {
			e.Err = sentinel
			break
		}
	}
	return err
}

// cappedBuffer keeps the first max bytes written to it and drops the rest,
// so a chatty git cannot grow an Error without bound.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string { return c.buf.String() }

// Unexpected reports output that the strict parsers refuse.
func Unexpected(what string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrUnexpectedOutput, what, fmt.Sprintf(format, args...))
}

// ErrorCode is git_failed, when the error wraps no sentinel of another
// package (it never does: its sentinels are git_failed too).
func (e *Error) ErrorCode() string { return "git_failed" }

// ErrorDetails are the error's facts: git's arguments, exit code and
// stderr.
func (e *Error) ErrorDetails() map[string]any {
	return map[string]any{"args": e.Args, "exit_code": e.ExitCode, "stderr": e.Stderr}
}
