package provider

import (
	"context"
	"fmt"

	"github.com/majlis-dev/majlis/gitops"
)

// Submodules and the pool: a pooled worktree is handed out by a rename,
// which git's own move refuses for a worktree with submodules (their git
// folders would not follow), so one with a .gitmodules file is never
// handed out (poolUnfit). A fill at a base that declares submodules
// would make only such worktrees: it is refused, and an allocation at
// such a base does not take one (its reason: submodules).

// baseHasSubmodules reports whether commit's tree declares submodules (a
// .gitmodules file at its top).
func (p *Provider) baseHasSubmodules(ctx context.Context, reader *gitops.Reader, commit string) (bool, error) {
	if reader == nil {
		r, err := gitops.OpenReader(ctx, p.reg.CommonDir)
		if err != nil {
			return false, err
		}
		reader = r
	}
	return reader.HasGitmodules(ctx, commit)
}

// refuseSubmoduleFill refuses a fill at base (named baseRef by the user)
// when base declares submodules: every worktree it made would stay in
// the pool unused.
func (p *Provider) refuseSubmoduleFill(ctx context.Context, reader *gitops.Reader, base, baseRef string) error {
	has, err := p.baseHasSubmodules(ctx, reader, base)
	if err != nil {
		return err
	}
	if !has {
		return nil
	}
	return &Error{Op: "pool fill", Err: ErrInvalidArgument,
		Reason: fmt.Sprintf("%s (%s) has submodules: a pooled worktree of it would never be handed out", baseRef, shortDigest(base)),
		Hint:   "allocations at this base make their workspaces without the pool; fill the pool at a base without submodules, or leave it empty"}
}
