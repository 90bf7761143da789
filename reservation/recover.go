package reservation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"golang.org/x/sys/unix"
)

// An Assessment is a read-only judgement of a lease: whether it has
// expired, what is known of its owner, and so whether Recover would retire
// it now.
type Assessment struct {
	Record      *Record         `json:"record"`
	Path        string          `json:"path"`
	Expired     bool            `json:"expired"`
	Liveness    procid.Liveness `json:"liveness"`
	Reason      string          `json:"reason"`
	Recoverable bool            `json:"recoverable"`
}

// Assess inspects the lease of res and judges its owner's liveness without
// changing anything.
func (d *Dir) Assess(res string) (*Assessment, error) {
	if err := checkResource(res); err != nil {
		return nil, &Error{Op: "assess", Resource: res, Err: err}
	}
	lp := d.leasePath(res)
	f, err := openRecord("assess", res, lp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Op: "assess", Resource: res, Path: lp, Err: ErrNotFound}
		}
		return nil, err
	}
	defer f.Close()
	rec, _, err := d.readOpen("assess", res, lp, f)
	if err != nil {
		return nil, err
	}
	a := &Assessment{Record: rec, Path: lp, Expired: rec.Expired(d.clock())}
	// A shared probe of the witness; released at once.
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
		a.Liveness, a.Reason = procid.Alive, "the lease file's witness lock is held by a live process"
	} else {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		a.Liveness, a.Reason = d.judgeOwner(rec.Owner)
	}
	a.Recoverable = a.Expired && a.Liveness == procid.Dead
	return a, nil
}

// Recover retires the expired lease of res whose owner is proven dead,
// moving it to retired/ and raising the generation high-water mark, and
// returns the retired record. It refuses, changing nothing, with
// ErrNotExpired, ErrOwnerAlive, ErrOwnerUnknown, ErrMalformed or ErrChanged
// (the lease was replaced since it was read). Recovery retires the lease
// file only: never anything the lease protected.
func (d *Dir) Recover(ctx context.Context, res string) (*Record, error) {
	return d.recover(ctx, res, true)
}

// RecoverDead retires the lease of res whose owner is proven dead, expired
// or not, as Recover does otherwise. It is for leases that protect nothing
// once their owner has died (the server lease names a process that
// answers requests, and a dead one answers none): a lease that protects
// files, whose dead owner's children may still be at work on them, keeps
// Recover's stricter rule (expired and proven dead).
func (d *Dir) RecoverDead(ctx context.Context, res string) (*Record, error) {
	return d.recover(ctx, res, false)
}

func (d *Dir) recover(ctx context.Context, res string, needExpiry bool) (*Record, error) {
	if err := checkResource(res); err != nil {
		return nil, &Error{Op: "recover", Resource: res, Err: err}
	}
	lp := d.leasePath(res)
	first, fi0, err := d.readFile("recover", res, lp)
	if errors.Is(err, ErrNotFound) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Err: ErrNotFound}
	}
	if err != nil {
		return nil, err
	}
	if needExpiry && !first.Expired(d.clock()) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: first, Err: ErrNotExpired,
			Reason: "it expires at " + first.ExpiresAt.UTC().Format(time.RFC3339)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.step("recover/inspected")
	side, err := d.sideLock(res)
	if err != nil {
		return nil, err
	}
	defer side.Unlock()
	d.step("recover/locked")

	// Under the side lock, the lease must still be the very file judged
	// above: a concurrent recoverer may have retired it, and a fresh owner
	// may hold the name now.
	f, err := openRecord("recover", res, lp)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: first, Err: ErrChanged,
			Reason: "the lease was released or recovered meanwhile"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, fi, err := d.readOpen("recover", res, lp, f)
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi0, fi) || rec.Token != first.Token {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrChanged,
			Reason: "another lease holds the name now"}
	}
	if needExpiry && !rec.Expired(d.clock()) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrNotExpired}
	}
	// Take the witness lock ourselves: if it is free the owner has closed
	// it (died), and holding it keeps the judgement true until we finish.
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerAlive,
			Reason: "the lease file's witness lock is held by a live process"}
	}
	switch live, why := d.judgeOwner(rec.Owner); live {
	case procid.Alive:
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerAlive, Reason: why}
	case procid.Unknown:
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerUnknown, Reason: why}
	}

	// Proven dead. Keep a copy under retired/ (no-clobber link), then
	// remove the name and raise the high-water mark in one rename.
	rd := filepath.Join(d.path, retiredDir)
	if err := os.Mkdir(rd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, &Error{Op: "recover", Resource: res, Path: rd, Err: err}
	}
	rp := filepath.Join(rd, res+"."+strconv.FormatUint(rec.Generation, 10)+"."+rec.Token+leaseSuffix)
	if err := os.Link(lp, rp); err != nil && !(errors.Is(err, os.ErrExist) && durable.SameFile(f, rp)) {
		return nil, &Error{Op: "recover", Resource: res, Path: rp, Err: err}
	}
	if err := durable.SyncDir(rd); err != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: rd, Err: err}
	}
	d.step("recover/linked")
	if err := d.retireName(res, rec.Generation, true); err != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Err: err}
	}
	d.step("recover/renamed")
	if err := d.syncDir(); err != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: d.path, Err: err}
	}
	_, _ = d.Sweep()
	return rec, nil
}

// judgeOwner decides, for an owner whose witness lock is free, whether it
// is proven dead. Anything short of proof is unknown.
func (d *Dir) judgeOwner(o procid.Owner) (procid.Liveness, string) {
	self, err := d.owner()
	if err != nil {
		return procid.Unknown, err.Error()
	}
	return procid.JudgeFrom(self, o)
}
