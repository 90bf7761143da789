package server

import (
	"context"
	"time"

	"github.com/majlis-dev/majlis/provider"
)

// DefaultPurgeInterval is how often the server purges the kept trash
// that is due (Options.PurgeInterval).
const DefaultPurgeInterval = time.Minute

// purgeLoop purges the repository's kept trash that is due
// (provider.PurgeDue: each salvaged first, oldest first), at once and
// then every interval, until ctx ends. Nothing a request waits for runs
// here: reclaims return as soon as the workspace is in its trash folder,
// and the deletion happens in this loop's time.
func purgeLoop(ctx context.Context, p *provider.Provider, every time.Duration, logf func(string, ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res, err := p.PurgeDue(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logf("purging the kept trash that is due failed (retrying in %s): %v", every, err)
		case res != nil:
			for _, t := range res.Purged {
				logf("purged the kept trash folder %s of %s (%s)", t.Path, t.Binding, t.Due)
			}
			for _, t := range res.Left {
				logf("left the kept trash folder %s of %s, due (%s): %s", t.Path, t.Binding, t.Due, t.Reason)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
