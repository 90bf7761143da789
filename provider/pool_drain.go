package provider

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/gitops"
	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// PoolDrainOptions say how many ready pooled worktrees a drain keeps.
type PoolDrainOptions struct {
	Keep int // ready worktrees kept (the newest); 0 drains them all
}

// PoolDrain deletes pooled worktrees: the ready ones beyond Keep (oldest
// first), those set aside, and those whose fill died before they were
// ready. It deletes only a worktree verified clean (no change, no
// untracked or ignored file) and still majlis's (its folder's identity,
// git's entry and its pin, majlis's lock or none); any other is left and
// reported with the reason (and a ready one that fails is set aside). A
// pooled worktree an allocation took is never touched.
func (p *Provider) PoolDrain(ctx context.Context, o PoolDrainOptions) (*PoolResult, error) {
	if o.Keep < 0 {
		return nil, &Error{Op: "pool drain", Err: ErrInvalidArgument, Reason: fmt.Sprintf("keep %d is negative", o.Keep)}
	}
	recs, err := p.poolRecords()
	if err != nil {
		return nil, err
	}
	res := &PoolResult{Pool: []PoolWorktree{}, Created: []PoolWorktree{}, Drained: []PoolWorktree{}, Left: []PoolWorktree{}}
	ready := 0
	for _, r := range recs {
		if poolState(r) == wire.PoolReady {
			ready++
		}
	}
	for _, r := range recs { // oldest first
		switch poolState(r) {
		case wire.PoolTaken:
			ev := r.Events[EventTaken]
			takers, err := p.records.Binding(ev.Taker)
			if err != nil {
				continue
			}
			if out := takenOutcome(r, takers); out == takenInWorkspace {
				// a hand-out that died before it retired the pooled claim
				_, _ = p.records.Publish(r, Event{Kind: EventHanded, Taker: ev.Taker, RequestID: ev.RequestID})
				continue
			} else if out != takenAbandoned {
				continue
			}
		case wire.PoolReady:
			if ready <= o.Keep {
				continue
			}
			ready--
		case wire.PoolFilling:
			if live, _ := procid.Judge(r.Claim.Allocator); live != procid.Dead {
				continue // a fill under way
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := poolView(r)
		if why, err := p.drainOne(ctx, r); err != nil {
			return nil, err
		} else if why != "" {
			v.Reason = why
			res.Left = append(res.Left, v)
			continue
		}
		res.Drained = append(res.Drained, v)
	}
	after, err := p.PoolList()
	if err != nil {
		return nil, err
	}
	res.Pool = after.Pool
	return res, nil
}

// drainOne deletes one pooled worktree once checkPooled holds, and
// publishes its reclaimed event (reason "drained"). It returns why it
// left the worktree, or "" when it is gone.
func (p *Provider) drainOne(ctx context.Context, r *claimRecord) (string, error) {
	c := r.Claim
	if gone, err := p.poolGone(r); err != nil || gone {
		return "", err
	}
	entry, err := p.checkPooled(ctx, r, false, false)
	var pc *errPoolCheck
	if errors.As(err, &pc) {
		if poolState(r) != wire.PoolAside && poolState(r) != wire.PoolFilling {
			if _, err := p.records.Publish(r, Event{Kind: EventAside, Reason: pc.why}); err != nil {
				return "", err
			}
		}
		return pc.why, nil
	}
	if err != nil {
		return "", err
	}
	if err := fpPoolDrain.Inject(); err != nil {
		return "", err
	}
	if err := gitops.UnlockWorktreeIf(entry, lockReason(r)); err != nil {
		return "", err
	}
	// git removes a worktree only when it is clean (no change and no
	// untracked file); ignored files were checked just before.
	if err := gitops.RemoveWorktree(context.WithoutCancel(ctx), c.CommonDir, c.Path, false); err != nil {
		_ = gitops.LockWorktree(context.WithoutCancel(ctx), c.CommonDir, c.Path, lockReason(r))
		return "git did not remove it: " + err.Error(), nil
	}
	return "", p.drained(r)
}

// poolGone finishes the drain of a pooled worktree that is gone already
// (a drain or an undone fill interrupted after git removed it): no folder
// and no entry of git's pinned with its claim.
func (p *Provider) poolGone(r *claimRecord) (bool, error) {
	if _, err := os.Lstat(r.Claim.Path); !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	pinned, err := gitops.EntriesPinnedWith(r.Claim.CommonDir, r.Digest)
	if err != nil || len(pinned) > 0 {
		return false, err
	}
	return true, p.drained(r)
}

// drained publishes the event that retires a pooled worktree's claim.
func (p *Provider) drained(r *claimRecord) error {
	kind := EventReclaimed
	if !r.has(EventCreated) {
		kind = EventFailed // a fill that never finished
	}
	_, err := p.records.Publish(r, Event{Kind: kind, Reason: "drained"})
	p.dropPoolStamp(r.Claim.Binding)
	return err
}
