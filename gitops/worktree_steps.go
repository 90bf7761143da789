package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"golang.org/x/sys/unix"
)

// fpAddDetached fires when the many-worktrees add has made the worktree,
// detached and empty, before its files and its branch.
var fpAddDetached = failpoint.New("gitops/add-detached")

// With many worktrees, `git worktree add -b` spends most of its time
// proving that the branch it has just created is checked out nowhere: it
// reads every worktree's HEAD and its rebase and bisect state (about 24
// µs a worktree, 24 ms of 60 with 1,000 worktrees). A branch created a
// moment ago by this command cannot be checked out anywhere, so from
// defaultStepsThreshold linked worktrees on (AddOptions.StepsThreshold)
// AddWorktree runs git's own steps
// itself, in an order that makes an interrupted add recognisable:
//
//  1. `git worktree add --detach --no-checkout --lock`, which checks the
//     path against every worktree as always, and locks the entry;
//  2. `git reset --hard` in the new worktree: the files and the index;
//  3. `git branch B C`, which refuses a branch that exists, made only
//     now, so that no other process can check it out during the checkout;
//  4. `git symbolic-ref HEAD refs/heads/B`, last, so that a worktree on
//     branch B has its files (an interrupted add is left detached);
//  5. the post-checkout hook, as `git worktree add` runs it (old HEAD all
//     zeros, new HEAD C, flag 1).
//
// The result is the one `git worktree add --lock -b` leaves; below the
// threshold the one command is faster (one process fewer).
const defaultStepsThreshold = 256

// manyWorktrees reports whether the repository whose directory is dir
// (its common git directory, as the provider passes it) has at least
// threshold linked worktrees (0: defaultStepsThreshold). It reads at most
// threshold names. The steps need nothing of git that majlis does not already
// need (rev-parse's --path-format, 2.31; majlis asks for 2.39), so git's
// version is not asked: that would be one more process per add.
func manyWorktrees(dir, commit string, threshold int) bool {
	if threshold <= 0 {
		threshold = defaultStepsThreshold
	}
	if !fullObjectID(commit) {
		return false // the hook is given the full id, which git alone would look up
	}
	// commit must be a commit's id, not an annotated tag's, as every
	// caller passes it (the provider peels its base): the hook is given
	// it as it is, where git's add gives the commit the tag peels to.
	f, err := os.Open(filepath.Join(dir, "worktrees"))
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(threshold)
	return len(names) >= threshold
}

// fullObjectID reports whether s is a full SHA-1 or SHA-256 object id.
func fullObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// addWorktreeInSteps is a new branch's AddWorktree in git's own steps
// (see defaultStepsThreshold), with the same results and the same
// errors. entryMade runs beside steps 2 to 5, once step 1 has made the
// entry.
func addWorktreeInSteps(ctx context.Context, dir, path, branch, commit, lockReason string, entryMade func() error) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// The hook's path does not depend on the new worktree: git is asked
	// for it while it makes the worktree, one process's start hidden.
	hook := lookUpPostCheckout(ctx, dir)
	defer hook() // waited for on every return, so no process outlives the add
	// 1. The worktree, detached at commit, empty and locked. git can die
	// on a sibling's entry that a concurrent add is still writing, before
	// it creates anything: try again then.
	args := []string{"worktree", "add", "--quiet", "--detach", "--no-checkout", "--lock"}
	if lockReason != "" {
		args = append(args, "--reason", lockReason)
	}
	args = append(args, "--", path, commit)
	err := addRetryingPartial(ctx, path, func() error {
		_, err := Run(ctx, dir, Cmd{}, args...)
		return err
	}, nil)
	if err != nil {
		// The path is someone else's, or the commit unknown: nothing of
		// this command's is left (the branch is made later).
		err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
		return classify(err, ErrUnknownRevision, "fatal: invalid reference: ", "fatal: not a valid object name: ")
	}
	if err := fpAddDetached.Inject(); err != nil {
		return err
	}
	// The caller's work on the entry runs while git writes the files, and
	// is waited for before anything else happens to the worktree (the
	// steps below may remove it).
	made := make(chan error, 1)
	go func() { made <- entryMade() }()
	// 2. The files and the index, in exactly that worktree (its git
	// directory and work tree named, as git names them for its children).
	o := Cmd{Ceiling: filepath.Dir(path)}
	reset := []string{"reset", "--hard", "--no-recurse-submodules"}
	if w := progressTo(ctx); w != nil {
		o.progress = w
	} else {
		reset = append(reset, "--quiet")
	}
	_, err = Run(ctx, path, o, reset...)
	if merr := <-made; err == nil {
		err = merr
	}
	if err != nil {
		return err
	}
	return finishSteps(ctx, dir, path, branch, commit, false, hook)
}

// FinishAddInSteps finishes an add in steps (see defaultStepsThreshold) that
// was stopped after its checkout: the worktree at path is detached at
// commit, its files and index written. It makes the branch (or takes one
// that exists at commit and is checked out nowhere: made by the stopped
// add just before it stopped), puts HEAD on it and runs the
// post-checkout hook. No file of the worktree is touched but by the hook.
// A branch elsewhere than commit, or checked out in a worktree, gives
// ErrBranchExists. dir is the repository's common git directory.
func FinishAddInSteps(ctx context.Context, dir, path, branch, commit string) error {
	// The hook's path is asked only when the hook is due, as a refusal
	// before it must leave no lookup running (nothing here is slow
	// enough to hide it behind).
	hook := func() (string, error) { return lookUpPostCheckout(ctx, dir)() }
	return finishSteps(ctx, dir, path, branch, commit, true, hook)
}

// finishSteps is the add in steps from its branch on; with adopt, a
// branch at commit checked out nowhere is taken as the add's own. hook
// gives the post-checkout hook's path (lookUpPostCheckout).
func finishSteps(ctx context.Context, dir, path, branch, commit string, adopt bool, hook func() (string, error)) error {
	// 3. The branch, refused if it exists, made only now: from the moment
	// it exists until HEAD is on it another process could check it out
	// (git worktree add -b leaves the same moment), and this keeps that
	// moment as short as git's, not the length of the checkout. A branch
	// made since the caller looked is someone else's: the worktree made
	// above, this command's alone, is removed and nothing is left.
	if _, err := Run(ctx, dir, Cmd{}, "branch", "--quiet", branch, commit); err != nil {
		err = classify(err, ErrBranchExists, "fatal: a branch named ")
		if adopt && !errors.Is(err, ErrBranchExists) {
			return err
		}
		if adopt {
			if ok, aerr := branchFree(ctx, dir, branch, commit); aerr != nil {
				return aerr
			} else if !ok {
				return err
			}
		} else {
			// Whatever git refused (a branch that exists, a name that
			// clashes with another branch's folder), git's own add would
			// have refused before making anything: neither is left.
			uctx := context.WithoutCancel(ctx)
			_ = UnlockWorktree(uctx, dir, path)
			if rerr := RemoveWorktree(uctx, dir, path, true); rerr != nil {
				return errors.Join(err, fmt.Errorf("gitops: removing the worktree %s made before the branch was refused: %w", path, rerr))
			}
			return err
		}
	}
	// 4. HEAD on the branch, last. Its reflog entry takes the message of
	// the entry git's own add leaves last (its reset, run on the branch),
	// so that the worktree's HEAD reflog reads as after git's add.
	if _, err := Run(ctx, path, Cmd{Ceiling: filepath.Dir(path)}, "symbolic-ref", "-m", "reset: moving to HEAD", "HEAD", "refs/heads/"+branch); err != nil {
		return err
	}
	// 5. The post-checkout hook, run as git worktree add runs it.
	return runPostCheckout(ctx, path, commit, hook)
}

// branchFree reports whether branch is at commit and checked out in no
// worktree.
func branchFree(ctx context.Context, dir, branch, commit string) (bool, error) {
	res, err := Run(ctx, dir, Cmd{ReadOnly: true, OKCodes: []int{1}}, "rev-parse", "-q", "--verify", "refs/heads/"+branch)
	if err != nil || res.Code == 1 || strings.TrimSuffix(string(res.Stdout), "\n") != commit {
		return false, err
	}
	wts, err := ListWorktrees(ctx, dir)
	if err != nil {
		return false, err
	}
	for _, w := range wts {
		if w.Branch == "refs/heads/"+branch {
			return false, nil
		}
	}
	return true, nil
}

// lookUpPostCheckout starts asking git where the post-checkout hook of
// `git -C dir worktree add` is: the hook that git finds from dir (a
// relative core.hooksPath is taken from there, not from the new
// worktree). The function it returns waits for the answer, an absolute
// path whether or not a hook is there.
func lookUpPostCheckout(ctx context.Context, dir string) func() (string, error) {
	type answer struct {
		path string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := Run(ctx, dir, Cmd{ReadOnly: true}, "rev-parse", "--path-format=absolute", "--git-path", "hooks/post-checkout")
		if err != nil {
			done <- answer{err: err}
			return
		}
		hook, ok := strings.CutSuffix(string(res.Stdout), "\n")
		if !ok || !filepath.IsAbs(hook) || strings.Contains(hook, "\n") {
			done <- answer{err: Unexpected("git rev-parse --git-path hooks/post-checkout", "want one absolute path, got %q", res.Stdout)}
			return
		}
		done <- answer{path: hook}
	}()
	return sync.OnceValues(func() (string, error) {
		a := <-done
		return a.path, a.err
	})
}

// runPostCheckout runs the post-checkout hook of a worktree just added at
// path as `git -C dir worktree add` runs it: the hook that hook names
// (lookUpPostCheckout), in the new worktree, with the arguments all zeros, commit,
// 1, and with no GIT_DIR or GIT_WORK_TREE (git unsets them for this hook,
// so that the hook's git finds the worktree from its directory, and git
// run by the hook in another repository acts on that one). `git hook
// run` cannot do it: it exports the GIT_DIR it found. Like every child of
// git, the hook has git's exec path first on its PATH, and GIT_EXEC_PATH.
// Its output goes to the error's text, as git's other output does.
func runPostCheckout(ctx context.Context, path, commit string, lookUp func() (string, error)) error {
	hook, err := lookUp()
	if err != nil {
		return err
	}
	// git runs the hook when it can execute it (access X_OK) and ignores
	// it otherwise.
	if fi, err := os.Stat(hook); err != nil || fi.IsDir() || unix.Access(hook, unix.X_OK) != nil {
		return nil
	}
	execPath, err := gitExecPath()
	if err != nil {
		return err
	}
	args := []string{strings.Repeat("0", len(commit)), commit, "1"}
	env := []string{}
	for _, kv := range environ(Cmd{}) {
		if k, _, _ := strings.Cut(kv, "="); k != "PATH" && k != "GIT_EXEC_PATH" {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_EXEC_PATH="+execPath, "PATH="+execPath+string(os.PathListSeparator)+os.Getenv("PATH"))
	out := &cappedBuffer{max: maxStderr}
	run := func(name string, argv ...string) error {
		cmd := exec.CommandContext(ctx, name, argv...)
		cmd.Dir, cmd.Env = path, env
		cmd.Cancel = func() error { return stopChild(cmd.Process) }
		cmd.Stdout, cmd.Stderr = out, out
		return cmd.Run()
	}
	err = run(hook, args...)
	if errors.Is(err, syscall.ENOEXEC) {
		// A script without a #! line: git runs it with the shell then.
		err = run("/bin/sh", append([]string{hook}, args...)...)
	}
	if err != nil {
		e := &Error{Dir: path, Args: append([]string{"hook", "run", "post-checkout", "--"}, args...), ExitCode: -1,
			Stderr: strings.TrimSpace(out.String())}
		var exit *exec.ExitError
		switch {
		case ctx.Err() != nil:
			e.Err = ctx.Err()
		case errors.As(err, &exit) && exit.Exited():
			e.ExitCode = exit.ExitCode()
		default:
			e.Err = err
		}
		return e
	}
	return nil
}

// gitExecPath is `git --exec-path`, asked once per process.
var gitExecPath = sync.OnceValues(func() (string, error) {
	res, err := Run(context.Background(), ".", Cmd{ReadOnly: true}, "--exec-path")
	if err != nil {
		return "", err
	}
	p, ok := strings.CutSuffix(string(res.Stdout), "\n")
	if !ok || !filepath.IsAbs(p) || strings.Contains(p, "\n") {
		return "", Unexpected("git --exec-path", "want one absolute path, got %q", res.Stdout)
	}
	return p, nil
})
