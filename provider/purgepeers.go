package provider

import (
	"context"
	"fmt"
)

// purgePeers refuses the purge of a kept trash folder that a retained
// peer overlaps, as a reclaim refuses its workspace: a repository someone
// cloned or initialised inside the kept folder (its commits and objects
// live only there, and no salvage can keep them), a worktree someone
// added inside it (its files are its own), or a workspace, worktree or
// repository that came to contain it. The peers are judged as a reclaim's
// re-check judges them, with the trash folder as the target.
func (p *Provider) purgePeers(ctx context.Context, r *claimRecord, trash string) error {
	target := *r
	target.Claim.Path, target.Claim.PhysicalPath = trash, trash
	peers, err := p.retainedPeers(ctx, &target)
	if err != nil {
		return err
	}
	for _, pr := range peers {
		if !pr.Overlaps {
			continue
		}
		who := pr.Kind
		if pr.Binding != "" {
			who += " " + pr.Binding
		}
		return &Error{Op: "purge", Binding: r.Claim.Binding, Path: trash, Peer: pr.Path, Err: ErrPeerOverlap,
			Reason: fmt.Sprintf("%s at %s overlaps the kept trash folder %s (%s); nothing was deleted", who, pr.Path, trash, pr.Relation),
			Hint: "move it out of the trash folder (or restore workspace " + r.Claim.Binding +
				" from its kept trash); the trash folder is kept until then, and the next purge tries again",
			Details: map[string]any{"peer": pr}}
	}
	return nil
}
