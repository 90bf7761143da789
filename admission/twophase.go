package admission

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"

	"github.com/majlis-dev/majlis/internal/procid"
)

// admitMixed admits a set with host and repository resources in two
// phases: (a) pending host rows, committed; (b) the repository
// transaction, which records the attempt; (c) the pending rows become
// granted. A denial or failure in (b) deletes the pending rows. A crash
// leaves pending rows that grant nothing and that the next admission
// meeting them settles by the attempt record: granted if (b) committed,
// deleted otherwise.
func (s *Service) admitMixed(ctx context.Context, p *prepared, hostIdx, repoIdx []int) (*AcquireResult, error) {
	hl, err := s.hostLedger(ctx, true)
	if err != nil {
		return nil, err
	}
	var res AcquireResult
	found, rec, err := s.precheck(ctx, "acquire", p.requestID, p.digest, &res)
	if err != nil {
		return nil, err
	}
	if found {
		return s.resume(ctx, hl, rec, &res)
	}
	self, err := procid.Of(os.Getpid())
	if err != nil {
		return nil, &Error{Op: "acquire", Err: err, Reason: "cannot establish this process's identity for a two-phase admission"}
	}
	adm, _ := json.Marshal(self)
	pend := &pendingInfo{attempt: "P-" + randomHex(), admitter: string(adm), repoLedger: s.repo.path}
	if p.shared != nil {
		pend.attempt = p.shared.attempt // the shared ledger's records commit with it
	}

	hostPhase, err := s.pendHost(ctx, hl, p, pend, hostIdx, repoIdx)
	if err != nil {
		return nil, err
	}
	// Clean-up must run even when ctx was cancelled meanwhile.
	cleanCtx := context.WithoutCancel(ctx)
	abandon := func(cause error) error {
		if _, err := s.settleAttempt(cleanCtx, hl, s.repo.path, pend.attempt); err != nil {
			return errors.Join(cause, err)
		}
		return cause
	}
	if err := step(fpHostPending); err != nil {
		return nil, abandon(err)
	}
	out, replayed, err := s.admitRepoPhase(ctx, p, pend, hostPhase, repoIdx, &res)
	switch {
	case err != nil:
		return nil, abandon(err)
	case replayed != nil:
		// A concurrent call with the same request id won: drop ours,
		// finish its.
		if err := abandon(nil); err != nil {
			return nil, err
		}
		return s.resume(ctx, hl, replayed, &res)
	}
	if err := s.confirmHost(cleanCtx, hl, pend); err != nil {
		return nil, err
	}
	return out, nil
}

// pendHost is phase (a) of admitMixed: it inserts the pending host rows
// and commits them, or, when the host ledger denies the request, returns
// the denial with the repository's conflicts too (so that the refusal is
// complete, and quarantined when any blocking lease is).
func (s *Service) pendHost(ctx context.Context, hl *ledger, p *prepared, pend *pendingInfo, hostIdx, repoIdx []int) (*evaluation, error) {
	var hostPhase, hostDenied *evaluation
	err := hl.tx(ctx, "acquire", func(c *sql.Conn) error {
		e, err := s.evaluate(ctx, hl, c, p, hostIdx)
		if err != nil {
			return err
		}
		if e.denied() {
			hostDenied = e
			return e.recordDenial(ctx)
		}
		if err := e.insertAll(ctx, pend); err != nil {
			return err
		}
		hostPhase = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hostDenied == nil {
		return hostPhase, nil
	}
	err = s.repo.tx(ctx, "acquire", func(c *sql.Conn) error {
		e, err := s.evaluate(ctx, s.repo, c, p, repoIdx)
		if err != nil || !e.denied() {
			return err
		}
		hostDenied.conflicts = append(hostDenied.conflicts, e.conflicts...)
		hostDenied.quarantined = hostDenied.quarantined || e.quarantined
		return e.recordDenial(ctx)
	})
	if err != nil {
		return nil, err
	}
	return nil, hostDenied.denial()
}

// admitRepoPhase is phase (b) of admitMixed: the repository transaction,
// which grants the repository's targets and records the attempt (and the
// request id) beside them. A request id some concurrent call recorded
// first is returned as replayed, its result in res; a denial is the error.
func (s *Service) admitRepoPhase(ctx context.Context, p *prepared, pend *pendingInfo, hostPhase *evaluation, repoIdx []int,
	res *AcquireResult) (out *AcquireResult, replayed *recorded, err error) {
	var denial error
	err = s.repo.tx(ctx, "acquire", func(c *sql.Conn) error {
		if p.requestID != "" {
			rec, err := lookupRequest(ctx, c, p.requestID)
			if err != nil {
				return err
			}
			if rec != nil {
				*res = AcquireResult{}
				if err := rec.replayInto("acquire", p.requestID, p.digest, res); err != nil {
					return err
				}
				replayed = rec
				return nil
			}
		}
		e, err := s.evaluate(ctx, s.repo, c, p, repoIdx)
		if err != nil {
			return err
		}
		if e.denied() {
			denial = e.denial()
			return e.recordDenial(ctx)
		}
		if err := e.insertAll(ctx, nil); err != nil {
			return err
		}
		e.merge(hostPhase)
		out = e.result(hostPhase)
		if err := e.recordWarnings(ctx); err != nil {
			return err
		}
		if _, err := c.ExecContext(ctx, `INSERT INTO attempts (id, at) VALUES (?, ?)`, pend.attempt, e.now); err != nil {
			return err
		}
		if p.requestID != "" {
			if err := recordRequest(ctx, c, e.now, p.requestID, "acquire", p.digest, out, pend.attempt); err != nil {
				return err
			}
		}
		return step(fpInTransaction)
	})
	if err == nil && denial != nil {
		err = denial
	}
	return out, replayed, err
}

// confirmHost is phase (c) of admitMixed: the pending host rows become
// granted. A failure here leaves the request granted in the repository
// ledger and its host rows pending: they are confirmed by a retry with the
// same request id, or by the next admission that meets them once this
// process has exited.
func (s *Service) confirmHost(ctx context.Context, hl *ledger, pend *pendingInfo) error {
	if err := step(fpRepoCommitted); err != nil {
		return err
	}
	committed, err := s.settleAttempt(ctx, hl, s.repo.path, pend.attempt)
	if err != nil {
		return &Error{Op: "acquire", Path: hl.path, Err: err,
			Reason: "the repository ledger granted the request but its host leases could not be confirmed",
			Hint:   "the next admission confirms them; a retry with the same request id shows the result", Details: map[string]any{"resumable": true}}
	}
	if !committed {
		return &Error{Op: "acquire", Path: s.repo.path, Err: errors.New("admission: committed attempt " + pend.attempt + " not found"),
			Reason: "the repository ledger lost a committed attempt"}
	}
	return nil
}

// resume finishes a replayed two-phase admission whose confirmation may
// have been interrupted, and returns its recorded result.
func (s *Service) resume(ctx context.Context, hl *ledger, rec *recorded, res *AcquireResult) (*AcquireResult, error) {
	res.Replayed = true
	if rec != nil && rec.attempt.Valid {
		if _, err := s.settleAttempt(context.WithoutCancel(ctx), hl, s.repo.path, rec.attempt.String); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// pendingInfo marks the host rows of a two-phase admission.
type pendingInfo struct {
	attempt    string // unique per admission attempt
	admitter   string // procid.Owner of the admitting process, JSON
	repoLedger string // where the attempt commits
}

// settleAttempt ends the pending host rows of attempt: granted when the
// repository ledger recorded the attempt, deleted otherwise. It reports
// whether the attempt committed.
func (s *Service) settleAttempt(ctx context.Context, hl *ledger, repoLedger, attempt string) (committed bool, err error) {
	err = hl.tx(ctx, "acquire", func(c *sql.Conn) error {
		committed, err = s.attemptCommitted(ctx, repoLedger, attempt)
		if err != nil {
			return err
		}
		now, err := s.ledgerNow(ctx, c)
		if err != nil {
			return err
		}
		return settlePending(ctx, c, now, repoLedger, attempt, committed)
	})
	return committed, err
}

// settlePending grants (committed) or deletes the pending rows of attempt,
// with an event for each.
func settlePending(ctx context.Context, c *sql.Conn, now int64, repoLedger, attempt string, committed bool) error {
	rows, err := c.QueryContext(ctx, `SELECT id, holder FROM leases WHERE pending_request = ? AND repo_ledger = ? AND state = 'pending'`,
		attempt, repoLedger)
	if err != nil {
		return err
	}
	type idHolder struct{ id, holder string }
	var ids []idHolder
	for rows.Next() {
		var x idHolder
		if err := rows.Scan(&x.id, &x.holder); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	kind, stmt := "grant", `UPDATE leases SET state = 'granted' WHERE id = ?`
	if !committed {
		kind, stmt = "abandon", `DELETE FROM leases WHERE id = ?`
	}
	for _, x := range ids {
		if _, err := c.ExecContext(ctx, stmt, x.id); err != nil {
			return err
		}
		if err := appendEvent(ctx, c, now, kind, x.holder, x.id, map[string]string{"attempt": attempt}); err != nil {
			return err
		}
	}
	return nil
}

// attemptCommitted reports whether the repository ledger at path recorded
// attempt. A ledger that does not exist recorded nothing.
func (s *Service) attemptCommitted(ctx context.Context, path, attempt string) (bool, error) {
	db := s.repo.db
	if path != s.repo.path {
		fi, err := os.Stat(path)
		if errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		l, err := openLedger(ctx, path, kindRepository, s.busy)
		if err != nil {
			return false, err
		}
		defer l.close()
		db = l.db
	}
	var one int
	err := db.QueryRowContext(ctx, `SELECT 1 FROM attempts WHERE id = ?`, attempt).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// settleDeadAdmitter is evaluation.settleDeadAdmitter inside any
// transaction c of the host ledger.
func (s *Service) settleDeadAdmitter(ctx context.Context, c *sql.Conn, now int64, r *row) (gone bool, why string, err error) {
	o, ok, err := ownerOf(r.admitter)
	if err != nil || !ok {
		return false, "its admitting process is not recorded", nil
	}
	live, why := procid.Judge(o)
	if live != procid.Dead {
		return false, why, nil
	}
	committed, cerr := s.attemptCommitted(ctx, r.repoLedger.String, r.pendingRequest.String)
	if cerr != nil {
		return false, "its admitter is dead but the ledger " + r.repoLedger.String + " cannot be read: " + cerr.Error(), nil
	}
	if err := settlePending(ctx, c, now, r.repoLedger.String, r.pendingRequest.String, committed); err != nil {
		return false, "", err
	}
	if !committed {
		return true, "", nil
	}
	r.state = "granted"
	return false, "", nil
}
