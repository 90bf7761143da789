package admission

import (
	"context"
	"database/sql"
	"fmt"
)

// One task, one token. A token guards the leases of one holder: an
// acquire whose token already guards another holder's live leases is
// refused (ErrTokenInUse), and an acquire for a holder whose live leases
// are guarded by another token than the one given is refused too
// (ErrTokenRequired): the holder's commands (begin, acquire, renew,
// release, end) then all work with the one token. Leases whose owner
// process is proven dead guard nothing any more and are not counted.

// tokenIndex finds the live leases a token guards.
const tokenIndex = `CREATE INDEX leases_token ON leases (token_digest) WHERE released_at IS NULL AND resolved_at IS NULL`

// ensureTokenIndex adds tokenIndex to a ledger made before it.
func (l *ledger) ensureTokenIndex(ctx context.Context) error {
	var n int
	if err := l.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'leases_token'`).Scan(&n); err != nil || n > 0 {
		return err
	}
	return l.tx(ctx, "open", func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS`+tokenIndex[len(`CREATE INDEX`):])
		return err
	})
}

// checkTokenUse refuses, inside the evaluation's transaction, a token that
// guards another holder's live leases, or a holder whose live leases are
// guarded by another token. The evaluation's ledger is read in its
// transaction, the other ledger (host or repository) as it is now.
func (e *evaluation) checkTokenUse(ctx context.Context) error {
	qs := []rowQuerier{e.c}
	if e.l.kind == kindHost {
		qs = append(qs, e.s.repo.db)
	} else if hl, err := e.s.hostLedger(ctx, false); err == nil && hl != nil {
		// A host ledger that cannot be opened is reported by whatever
		// needs it: a grant in the repository ledger does not.
		qs = append(qs, hl.db)
	}
	for _, q := range qs {
		if err := e.tokenUseIn(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

func (e *evaluation) tokenUseIn(ctx context.Context, q rowQuerier) error {
	d := tokenDigest(e.p.token)
	repo := e.s.repoID
	others, err := queryRows(ctx, q, `SELECT `+rowColumns+` FROM leases WHERE token_digest = ?`+liveClause+
		` AND state = 'granted' AND NOT (holder = ? AND repo = ?) LIMIT 8`, d, e.p.holder, repo)
	if err != nil {
		return err
	}
	for _, r := range others {
		if r.ownerDead() {
			continue
		}
		return &Error{Op: "acquire", Resource: r.resource, Err: ErrTokenInUse,
			Reason:  fmt.Sprintf("the lease token given guards lease %s of %s; each task needs a token of its own", r.id, r.holder),
			Hint:    "give " + e.p.holder + " its own token (a token file of its own, or none: one is then generated)",
			Details: map[string]any{"holder": e.p.holder, "other_holder": r.holder, "lease": r.id}}
	}
	mine, err := queryRows(ctx, q, `SELECT `+rowColumns+` FROM leases WHERE holder = ? AND repo = ?`+liveClause+
		` AND state = 'granted' AND token_digest IS NOT NULL AND token_digest != ? LIMIT 8`, e.p.holder, repo, d)
	if err != nil {
		return err
	}
	for _, r := range mine {
		if r.ownerDead() {
			continue
		}
		reason := fmt.Sprintf("%s holds lease %s, guarded by another lease token than the one given", r.holder, r.id)
		if e.p.generated {
			reason = fmt.Sprintf("%s holds lease %s, guarded by its lease token, and none was given", r.holder, r.id)
		}
		return &Error{Op: "acquire", Resource: r.resource, Err: ErrTokenRequired,
			Reason:  reason + ": a task's leases share one token, so that it renews and releases them all",
			Hint:    "acquire with " + r.holder + "'s token (the one given or printed when its leases were granted)",
			Details: map[string]any{"holder": r.holder, "lease": r.id, "token_of_holder": true}}
	}
	return nil
}
