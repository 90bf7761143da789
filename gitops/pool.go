package gitops

import (
	"context"
	"errors"
)

// The git operations of the warm pool (the provider's pool*.go).

// AddPoolWorktree adds a linked worktree at path, HEAD detached at
// commit, locked with reason, its files checked out, and runs no hook:
// a pooled worktree is made ahead of any task, and its post-checkout hook
// runs when it is handed out (RunPostCheckout), as `git worktree add`
// would have run it then. dir is any directory of the repository.
func AddPoolWorktree(ctx context.Context, dir, path, commit, reason string) error {
	if path == "" || commit == "" || reason == "" {
		return errors.New("gitops: a pooled worktree needs a path, a commit and a lock reason")
	}
	co, args := checkoutOpts(ctx)
	args = append([]string{"-c", "core.hooksPath=" + noHooksDir}, args...)
	args = append(args, "--detach", "--lock", "--reason", reason, "--", path, commit)
	err := addRetryingPartial(ctx, path, func() error {
		_, err := git(ctx, dir, co, args...)
		return err
	}, func() bool { return true })
	err = classify(err, ErrPathExists, "' already exists", "is a missing but already registered worktree", "is a missing but locked worktree")
	return classify(err, ErrUnknownRevision, "fatal: invalid reference: ", "fatal: not a valid object name: ")
}

// noHooksDir is a hooks folder that holds no hook on any system.
const noHooksDir = "/dev/null"
