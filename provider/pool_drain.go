package provider

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/wire"
)

// PoolDrainOptions say how many ready pooled worktrees a drain keeps.
type PoolDrainOptions struct {
	Keep int // ready worktrees kept (the newest); 0 drains them all
}

// PoolDrain deletes pooled worktrees: the ready ones beyond Keep (oldest
// first), those set aside, those whose fill died before they were ready,
// and those a drain began on. It deletes only a worktree moved out of
// reach first and verified there: clean (no change, no untracked or
// ignored file, no hard link), used by no process, and still majlis's
// (its folder's identity, git's entry and its pin, majlis's lock or
// none: pool_drain_aside.go). Any other is left and reported with the
// reason (and set aside), and the drain goes on with the next. A pooled
// worktree an allocation took is never touched: a drain and a hand-out
// race for a ready one through the same event, and exactly one gets it.
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
			if !p.drainsTaken(r) {
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
		if err := p.drainOne(ctx, r); err != nil {
			if ctx.Err() != nil && !errors.As(err, new(*errDrainLeft)) {
				return nil, err
			}
			if now, rerr := p.claimOf(r.Claim.Binding, r.Claim.Seq); rerr == nil {
				v = poolView(now)
				if ev := now.Events[EventHanded]; ev != nil {
					v.State, v.Taker = wire.PoolTaken, ev.Taker // it is that workspace now
				}
			}
			v.Reason = leftReason(err)
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

// drainsTaken says whether a drain deletes the taken pooled worktree r:
// only when the allocation that took it failed or made its workspace
// otherwise. One whose allocation finished is retired here (handed).
func (p *Provider) drainsTaken(r *claimRecord) bool {
	ev := r.Events[EventTaken]
	takers, err := p.records.Binding(ev.Taker)
	if err != nil {
		return false
	}
	switch takenOutcome(r, takers) {
	case takenInWorkspace:
		// a hand-out that died before it retired the pooled claim
		_, _ = p.records.Publish(r, Event{Kind: EventHanded, Taker: ev.Taker, RequestID: ev.RequestID})
	case takenAbandoned:
		return true
	}
	return false
}

// poolGone finishes the drain of a pooled worktree whose folder is gone
// (an undone fill, a folder deleted by hand, or a drain interrupted after
// it deleted the folder): no folder at its path nor aside; git's entries
// pinned with its claim are dropped (dropPooledEntry), then its claim
// retires.
func (p *Provider) poolGone(r *claimRecord) (bool, error) {
	for _, at := range []string{r.Claim.Path, drainAsidePath(&r.Claim)} {
		if _, err := os.Lstat(at); !errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
	}
	// Its folder deleted by hand: git's entry of it, locked by majlis,
	// holds nothing of anyone's once the folder is gone.
	if err := p.dropPooledEntry(r, r.Events[EventDraining]); err != nil {
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
