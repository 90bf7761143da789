package gitops

import (
	"context"
	"errors"
	"fmt"
)

// A CheckoutMode says what HEAD of a new worktree is.
type CheckoutMode int

// Checkout modes of AddWorktree.
const (
	NewBranch      CheckoutMode = iota // a new branch at the commit (-b)
	ExistingBranch                     // an existing branch, as it is (never moved)
	Detached                           // HEAD detached at the commit (only with NoCheckout)
)

// AddOptions say what AddWorktree makes.
type AddOptions struct {
	// Path is where the worktree goes; a relative path is relative to
	// the directory AddWorktree is given.
	Path string
	// Mode says what HEAD of the new worktree is: a new Branch at Commit
	// (NewBranch, the default), the existing Branch as it is
	// (ExistingBranch), or detached at Commit (Detached, with NoCheckout).
	Mode   CheckoutMode
	Branch string // a short name, refs/heads/ implied
	Commit string // a commit's full id (the provider peels its base)
	// LockReason is the reason the worktree is locked with: it is
	// always created locked, so that no `git worktree prune` (run by the
	// user) can drop its administrative files while its directory is
	// briefly unreachable; empty, git records "added with --lock".
	LockReason string
	// NoCheckout makes the worktree without checking out any file and
	// without an index (`git worktree add --no-checkout`): salvage.RestoreInto
	// fills it. An ExistingBranch then needs Branch to be at Commit.
	NoCheckout bool
	// EntryMade, when set, is called once git has made the worktree and
	// its entry, and before AddWorktree returns: when a new branch's
	// checkout runs in steps (StepsThreshold), while git checks the files
	// out and before it makes the branch; otherwise after git's add.
	// EntryMade must not run git, nor change the worktree's files or
	// git's files in its entry (it may add one of its own there: the
	// provider's pin). Its error stops the add as soon as it can and is
	// returned, the worktree left for the caller to remove as after any
	// failure; what EntryMade wrote goes with it.
	EntryMade func() error
	// StepsThreshold is the number of linked worktrees from which a new
	// branch checked out is added in git's own steps (see
	// defaultStepsThreshold); 0 means that default. Tests set it low.
	StepsThreshold int
}

// AddWorktree creates a linked worktree as o says (`git worktree add
// --lock --reason R [-b branch | --detach] [--no-checkout] -- path
// commit`). dir is any directory of the repository (the provider passes
// its common git directory).
//
// A branch that already exists (or, for ExistingBranch, is checked out in
// another worktree) gives ErrBranchExists; an existing path, or a path
// registered to a missing worktree, gives ErrPathExists; an unknown commit
// or branch gives ErrUnknownRevision. git creates a new branch before it
// checks the path, so on ErrPathExists AddWorktree deletes the branch
// again: nothing is left behind. Other failures may leave the branch, and
// even the worktree (a post-checkout hook that fails runs after the
// checkout); the caller, which knows the branch and path were new, cleans
// up. An ExistingBranch is never created nor moved.
func AddWorktree(ctx context.Context, dir string, o AddOptions) error {
	var err error
	switch {
	case o.NoCheckout:
		err = addEmpty(ctx, dir, o)
	case o.Mode == ExistingBranch:
		err = addBranch(ctx, dir, o)
	case o.Mode == NewBranch:
		return addNewBranch(ctx, dir, o)
	default:
		return errors.New("gitops: a detached worktree is added only without a checkout")
	}
	if err == nil && o.EntryMade != nil {
		err = o.EntryMade()
	}
	return err
}

// addNewBranch adds a worktree checked out on a new branch: git's one
// command, or its steps from StepsThreshold linked worktrees on.
func addNewBranch(ctx context.Context, dir string, o AddOptions) error {
	if o.Branch == "" || o.Commit == "" || o.Path == "" {
		return errors.New("gitops: AddWorktree needs a path, a branch and a commit")
	}
	entryMade := o.EntryMade
	if entryMade == nil {
		entryMade = func() error { return nil }
	}
	if manyWorktrees(dir, o.Commit, o.StepsThreshold) {
		return addWorktreeInSteps(ctx, dir, o.Path, o.Branch, o.Commit, o.LockReason, entryMade)
	}
	co, args := checkoutOpts(ctx)
	args = append(args, "--lock")
	if o.LockReason != "" {
		args = append(args, "--reason", o.LockReason)
	}
	args = append(args, "-b", o.Branch, "--", o.Path, o.Commit)
	// No branch may be left behind before a retry (or one we may remove,
	// since -b names a branch that did not exist).
	err := addRetryingPartial(ctx, o.Path, func() error {
		_, err := Run(ctx, dir, co, args...)
		return err
	}, func() bool { return removeBranchAt(context.WithoutCancel(ctx), dir, "refs/heads/"+o.Branch, o.Commit) })
	if err == nil {
		return entryMade()
	}
	err = classify(err, ErrBranchExists, "fatal: a branch named ")
	err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
	err = classify(err, ErrUnknownRevision, "fatal: invalid reference: ", "fatal: not a valid object name: ")
	if !errors.Is(err, ErrPathExists) {
		return err
	}
	if cerr := deleteCreatedBranch(context.WithoutCancel(ctx), dir, "refs/heads/"+o.Branch); cerr != nil {
		return errors.Join(err, fmt.Errorf("gitops: removing branch %s left by the failed worktree add: %w", o.Branch, cerr))
	}
	return err
}

// addEmpty adds a worktree whose HEAD is a branch or a commit as o.Mode
// says, without checking out any file and without an index.
func addEmpty(ctx context.Context, dir string, o AddOptions) error {
	if o.Path == "" || o.Commit == "" || o.Mode != Detached && o.Branch == "" {
		return errors.New("gitops: an add without checkout needs a path, a commit and, unless detached, a branch")
	}
	args := []string{"worktree", "add", "--quiet", "--no-checkout", "--lock"}
	if o.LockReason != "" {
		args = append(args, "--reason", o.LockReason)
	}
	switch o.Mode {
	case NewBranch:
		args = append(args, "-b", o.Branch, "--", o.Path, o.Commit)
	case ExistingBranch:
		args = append(args, "--", o.Path, o.Branch)
	case Detached:
		args = append(args, "--detach", "--", o.Path, o.Commit)
	}
	_, err := Run(ctx, dir, Cmd{}, args...)
	err = classify(err, ErrBranchExists, "fatal: a branch named ", "is already checked out at", "is already used by worktree at")
	err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
	err = classify(err, ErrUnknownRevision, "fatal: invalid reference: ", "fatal: not a valid object name: ")
	if errors.Is(err, ErrPathExists) && o.Mode == NewBranch {
		if cerr := deleteCreatedBranch(context.WithoutCancel(ctx), dir, "refs/heads/"+o.Branch); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	return err
}

// addBranch adds a worktree with the existing branch checked out as it is
// (`git worktree add -- path branch`): the branch is neither created nor
// moved, and one that does not exist is ErrUnknownRevision, never
// created.
func addBranch(ctx context.Context, dir string, o AddOptions) error {
	if o.Path == "" || o.Branch == "" {
		return errors.New("gitops: an add of an existing branch needs a path and a branch")
	}
	if err := CheckBranchName(o.Branch); err != nil {
		return err
	}
	ref := "refs/heads/" + o.Branch
	if _, err := Run(ctx, dir, Cmd{}, "rev-parse", "--verify", "--quiet", ref); err != nil {
		return fmt.Errorf("%w: no branch %s", ErrUnknownRevision, o.Branch)
	}
	co, args := checkoutOpts(ctx)
	args = append(args, "--lock")
	if o.LockReason != "" {
		args = append(args, "--reason", o.LockReason)
	}
	// The short name of a branch that exists: git checks that branch out
	// (a full ref name would detach); never guess a remote one to create.
	args = append(args, "--no-guess-remote", "--", o.Path, o.Branch)
	_, err := Run(ctx, dir, co, args...)
	err = classify(err, ErrBranchExists, "is already checked out at", "is already used by worktree at")
	err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
	return classify(err, ErrUnknownRevision, "fatal: invalid reference: ")
}
