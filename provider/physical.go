package provider

import (
	"context"
	"errors"
	"os"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/pathid"
)

// asGitSees returns rec as git sees its workspace. A workspace's path is
// recorded twice: as given (lexical, through any symbolic link in its
// parents) and as the folder it was (physical); git records the physical
// one. When a symbolic link among the parents was pointed elsewhere since,
// nothing is at the lexical path any more, but the workspace is still at
// its physical path, the very directory allocated, and git lists it
// there: it is not missing. The returned copy's Path is then the physical
// path, where every check and step of a reclaim acts (its trash folder
// beside it, on its file system). In every other case rec itself is
// returned, and judged as before.
func (p *Provider) asGitSees(ctx context.Context, rec *claimRecord) *claimRecord {
	c := rec.Claim
	ev := rec.Events[EventCreated]
	if ev == nil || c.PhysicalPath == c.Path {
		return rec
	}
	if _, err := os.Lstat(c.Path); !errors.Is(err, os.ErrNotExist) {
		return rec
	}
	fi, err := os.Lstat(c.PhysicalPath)
	if err != nil || !fi.IsDir() {
		return rec
	}
	if id, err := pathid.Lstat(c.PhysicalPath); err != nil || id.Dev != ev.Dev || id.Ino != ev.Ino {
		return rec
	}
	paths, err := gitops.WorktreePaths(ctx, c.CommonDir)
	if err != nil {
		return rec
	}
	for _, w := range paths {
		if w == c.PhysicalPath {
			at := *rec
			at.Claim.Path = c.PhysicalPath
			return &at
		}
	}
	return rec
}
