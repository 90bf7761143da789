package provider

import (
	"context"
	"fmt"
)

// purgeKeepSubmodules copies the history of the kept trash folder's
// checked-out submodules into the repository before the purge deletes
// git's entry of it, which holds their repositories
// (<entry>/modules/...): commits made in a submodule inside the kept
// folder, after the reclaim copied its history, live nowhere else. Their
// uncommitted work is salvaged into their own salvage refs first, which
// the copy takes along (keepSubmodules, as a reclaim with
// --salvage-submodules: a purge asks nobody). A failure deletes nothing.
func (p *Provider) purgeKeepSubmodules(ctx context.Context, r *claimRecord, trash string, dirty []string) error {
	target := *r
	target.Claim.Path, target.Claim.PhysicalPath = trash, trash
	kept, err := p.keepSubmodules(ctx, &target, dirty, true)
	if err != nil {
		return &Error{Op: "purge", Binding: r.Claim.Binding, Path: trash, Err: ErrTrash,
			Reason: "keeping the history of its submodules failed: " + err.Error() + "; nothing was deleted",
			Hint:   "the trash folder is kept until this is fixed; the next purge tries again"}
	}
	if len(kept) > 0 {
		p.log.Info("the kept trash's submodules kept", "binding", r.Claim.Binding, "submodules", fmt.Sprint(kept))
	}
	return nil
}
