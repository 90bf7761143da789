package reservation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Liveness is what can be proven about a lease owner from this host.
type Liveness string

const (
	OwnerAlive   Liveness = "alive"   // the owner (or a process it shared the witness with) is running
	OwnerDead    Liveness = "dead"    // proven dead: nothing of it can still write
	OwnerUnknown Liveness = "unknown" // cannot be proven either way from here
)

// An Assessment is a read-only judgement of a lease: whether it has
// expired, what is known of its owner, and so whether Recover would retire
// it now.
type Assessment struct {
	Record      *Record  `json:"record"`
	Path        string   `json:"path"`
	Expired     bool     `json:"expired"`
	Liveness    Liveness `json:"liveness"`
	Reason      string   `json:"reason"`
	Recoverable bool     `json:"recoverable"`
}

// Assess inspects the lease of res and judges its owner's liveness without
// changing anything.
func (d *Dir) Assess(res string) (*Assessment, error) {
	if err := checkResource(res); err != nil {
		return nil, &Error{Op: "assess", Resource: res, Err: err}
	}
	lp := d.leasePath(res)
	f, err := os.Open(lp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{Op: "assess", Resource: res, Path: lp, Err: ErrNotFound}
		}
		return nil, &Error{Op: "assess", Resource: res, Path: lp, Err: err}
	}
	defer f.Close()
	rec, _, err := d.readOpen("assess", res, lp, f)
	if err != nil {
		return nil, err
	}
	a := &Assessment{Record: rec, Path: lp, Expired: rec.Expired(d.clock())}
	// A shared probe of the witness; released at once.
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
		a.Liveness, a.Reason = OwnerAlive, "the lease file's witness lock is held by a live process"
	} else {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		a.Liveness, a.Reason = d.judgeOwner(rec.Owner)
	}
	a.Recoverable = a.Expired && a.Liveness == OwnerDead
	return a, nil
}

// Recover retires the expired lease of res whose owner is proven dead,
// moving it to retired/ and raising the generation high-water mark, and
// returns the retired record. It refuses, changing nothing, with
// ErrNotExpired, ErrOwnerAlive, ErrOwnerUnknown, ErrMalformed or ErrChanged
// (the lease was replaced since it was read). Recovery retires the lease
// file only: never anything the lease protected.
func (d *Dir) Recover(ctx context.Context, res string) (*Record, error) {
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
	if !first.Expired(d.clock()) {
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
	f, err := os.Open(lp)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: first, Err: ErrChanged,
			Reason: "the lease was released or recovered meanwhile"}
	}
	if err != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Err: err}
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
	if !rec.Expired(d.clock()) {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrNotExpired}
	}
	// Take the witness lock ourselves: if it is free the owner has closed
	// it (died), and holding it keeps the judgement true until we finish.
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerAlive,
			Reason: "the lease file's witness lock is held by a live process"}
	}
	switch live, why := d.judgeOwner(rec.Owner); live {
	case OwnerAlive:
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerAlive, Reason: why}
	case OwnerUnknown:
		return nil, &Error{Op: "recover", Resource: res, Path: lp, Holder: rec, Err: ErrOwnerUnknown, Reason: why}
	}

	// Proven dead. Keep a copy under retired/ (no-clobber link), then
	// remove the name and raise the high-water mark in one rename.
	rd := filepath.Join(d.path, retiredDir)
	if err := os.Mkdir(rd, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, &Error{Op: "recover", Resource: res, Path: rd, Err: err}
	}
	rp := filepath.Join(rd, res+"."+strconv.FormatUint(rec.Generation, 10)+"."+rec.Token+leaseSuffix)
	if err := os.Link(lp, rp); err != nil && !(errors.Is(err, os.ErrExist) && sameFile(f, rp)) {
		return nil, &Error{Op: "recover", Resource: res, Path: rp, Err: err}
	}
	if err := syncPath(rd); err != nil {
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
func (d *Dir) judgeOwner(o Owner) (Liveness, string) {
	self, err := d.owner()
	if err != nil {
		return OwnerUnknown, err.Error()
	}
	if o.MachineID != self.MachineID {
		return OwnerUnknown, fmt.Sprintf("the owner ran on another machine (machine id %s, this is %s)", short(o.MachineID), short(self.MachineID))
	}
	if o.BootID != self.BootID {
		return OwnerDead, fmt.Sprintf("the owner's boot %s has ended (this machine has booted again: %s)", short(o.BootID), short(self.BootID))
	}
	if o.PIDNamespace != self.PIDNamespace {
		return OwnerUnknown, fmt.Sprintf("the owner ran in pid namespace %s, not this one (%s)", o.PIDNamespace, self.PIDNamespace)
	}
	exists, err := pidExists(o.PID)
	if err != nil {
		return OwnerUnknown, fmt.Sprintf("cannot tell whether pid %d exists: %v", o.PID, err)
	}
	if !exists {
		return OwnerDead, fmt.Sprintf("no process has pid %d", o.PID)
	}
	info, err := d.readProc(o.PID)
	if errors.Is(err, errNoProcess) {
		// Gone between the two looks, or hidden from us: ask once more.
		if exists, err2 := pidExists(o.PID); err2 == nil && !exists {
			return OwnerDead, fmt.Sprintf("no process has pid %d", o.PID)
		}
		return OwnerUnknown, fmt.Sprintf("pid %d exists but /proc/%d/stat cannot be read", o.PID, o.PID)
	}
	if err != nil {
		return OwnerUnknown, fmt.Sprintf("cannot read the start time of pid %d: %v", o.PID, err)
	}
	if info.startTime != o.StartTime {
		return OwnerDead, fmt.Sprintf("pid %d now belongs to another process (start time %d, the owner's was %d)", o.PID, info.startTime, o.StartTime)
	}
	if info.state == 'Z' || info.state == 'X' {
		return OwnerDead, fmt.Sprintf("process %d has exited (zombie, not yet reaped)", o.PID)
	}
	return OwnerAlive, fmt.Sprintf("process %d is still running", o.PID)
}

// syncPath fsyncs a directory by path.
func syncPath(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
