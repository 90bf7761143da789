package serverctl

import (
	"context"
	"errors"
	"time"

	"github.com/majlis-dev/majlis/internal/procid"
	"github.com/majlis-dev/majlis/reservation"
)

// A RetiredLease is the server lease that a start retired because its
// owner was proven dead: the record's facts, without its token (the dead
// server's bearer token, which nothing prints).
type RetiredLease struct {
	Resource   string            `json:"resource"`
	Purpose    string            `json:"purpose"`
	Generation uint64            `json:"generation"`
	AcquiredAt time.Time         `json:"acquired_at"`
	RenewedAt  time.Time         `json:"renewed_at"`
	ExpiresAt  time.Time         `json:"expires_at"`
	Metadata   map[string]string `json:"metadata"`
	Owner      procid.Owner      `json:"owner"`
}

func retired(rec *reservation.Record) *RetiredLease {
	return &RetiredLease{Resource: rec.Resource, Purpose: rec.Purpose, Generation: rec.Generation, AcquiredAt: rec.AcquiredAt,
		RenewedAt: rec.RenewedAt, ExpiresAt: rec.ExpiresAt, Metadata: rec.Metadata, Owner: rec.Owner}
}

// retireDead retires the server lease of a dead owner at once, under the
// start lock, and records it in res. The owner must be proven dead by its
// exact identity (machine, boot, pid and start time, and its witness lock
// free); its expiry is not waited for. A server lease protects no files:
// it says which process answers for the repository, and a dead one
// answers nothing, so waiting would only keep every client out. (A
// reclaim reservation keeps the stricter rule, expired and proven dead:
// it protects files that the git processes its dead owner started may
// still be changing.) Should the lease have moved meanwhile, nothing is
// retired and the caller probes again.
func retireDead(ctx context.Context, leases *reservation.Dir, res *StartResult) error {
	rec, err := leases.RecoverDead(ctx, Resource)
	switch {
	case err == nil:
		res.Recovered = retired(rec)
		return nil
	case errors.Is(err, reservation.ErrChanged), errors.Is(err, reservation.ErrNotFound):
		return nil
	}
	return &Error{Op: "start", Err: ErrStaleLease, Reason: "retiring the dead server's lease: " + err.Error()}
}
