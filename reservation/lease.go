package reservation

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
)

// A Request describes the lease an Acquire asks for.
type Request struct {
	Resource string        // name of the resource: letters, digits and ._:@+=- (not first)
	Purpose  string        // why it is held, for people reading the holder's facts
	TTL      time.Duration // time to expiry; the holder renews before it passes

	AuthorityDigest string            // what the holder pins (e.g. a claim digest); may be empty
	Metadata        map[string]string // free facts (binding, request id)

	// Wait is how long Acquire keeps retrying, with backoff, while another
	// owner holds the resource. Zero tries once. The context's deadline, if
	// earlier, also ends the wait.
	Wait time.Duration
}

// A Lease is a held lease file. Its holder must Release it when done (or
// die, leaving it to be recovered after expiry). The Lease keeps the file
// open with an exclusive flock: that lock is the witness that the owner is
// alive. A Lease is only valid in the process that acquired it.
type Lease struct {
	dir *Dir

	mu       sync.Mutex
	rec      Record
	f        *os.File // the witness: the lease file, flocked
	pid      int
	released bool
}

// Record returns a copy of the lease's current record.
func (l *Lease) Record() Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rec
	r.Metadata = cloneMap(l.rec.Metadata)
	return r
}

// Path returns the lease file's path.
func (l *Lease) Path() string { return l.dir.leasePath(l.rec.Resource) }

// Acquire grants the resource to the calling process, or fails with an
// *Error wrapping ErrHeld that carries the holder's record. It never
// overwrites an existing lease, and a malformed existing lease refuses with
// ErrMalformed rather than being treated as free.
func (d *Dir) Acquire(ctx context.Context, req Request) (*Lease, error) {
	if err := checkRequest(req); err != nil {
		return nil, &Error{Op: "acquire", Resource: req.Resource, Err: err}
	}
	self, err := d.owner()
	if err != nil {
		return nil, &Error{Op: "acquire", Resource: req.Resource, Err: err}
	}
	var deadline time.Time
	if req.Wait > 0 {
		deadline = time.Now().Add(req.Wait)
	}
	backoff := time.Millisecond
	for {
		// A waiter that finds the side lock taken (another acquirer, or the
		// holder releasing) backs off instead of queueing on it, while its
		// backoff is short; once it has waited long, it queues (so it is not
		// starved by faster contenders), and so does the last attempt, which
		// must end with a definite answer.
		last := req.Wait <= 0 || !time.Now().Add(backoff).Before(deadline)
		l, err := d.tryAcquire(req, self, last || backoff >= 16*time.Millisecond)
		if errors.Is(err, errSideBusy) {
			err = &Error{Op: "acquire", Resource: req.Resource, Path: d.leasePath(req.Resource), Err: ErrHeld,
				Reason: "another process is acquiring or releasing it"}
		}
		if err == nil || !errors.Is(err, ErrHeld) || last {
			return l, err
		}
		sleep := backoff/2 + rand.N(backoff) // jitter, so contenders spread out
		if time.Now().Add(sleep).After(deadline) {
			sleep = time.Until(deadline)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		backoff = min(2*backoff, 64*time.Millisecond)
	}
}

func checkRequest(req Request) error {
	if err := checkResource(req.Resource); err != nil {
		return err
	}
	switch {
	case req.Purpose == "":
		return fmt.Errorf("%w: empty purpose", ErrInvalid)
	case req.TTL <= 0:
		return fmt.Errorf("%w: TTL %v is not positive", ErrInvalid, req.TTL)
	}
	for k := range req.Metadata {
		if k == "" {
			return fmt.Errorf("%w: empty metadata key", ErrInvalid)
		}
	}
	return nil
}

// errSideBusy: the side lock was taken and the caller asked not to wait.
var errSideBusy = errors.New("reservation: side lock busy")

func (d *Dir) tryAcquire(req Request, self procid.Owner, waitLock bool) (l *Lease, err error) {
	res := req.Resource
	lp := d.leasePath(res)
	// A held lease is reported without taking the side lock, so that
	// waiters do not queue behind the holder's own release. Lease files are
	// complete from the moment they are linked, so this read is safe.
	if holder, _, err := d.readFile("acquire", res, lp); err == nil {
		d.step("acquire/held")
		return nil, &Error{Op: "acquire", Resource: res, Path: lp, Holder: holder, Err: ErrHeld}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	var side *flock.Flock
	if waitLock {
		side, err = d.sideLock(res)
	} else {
		side, err = d.trySideLock(res)
	}
	if err != nil {
		return nil, err
	}
	defer side.Unlock()
	d.step("acquire/locked")

	// Under the side lock nobody else publishes or removes the lease name
	// by the rules of this package, so an existing lease means held. The
	// link below stays the arbiter all the same.
	if holder, _, err := d.readFile("acquire", res, lp); err == nil {
		return nil, &Error{Op: "acquire", Resource: res, Path: lp, Holder: holder, Err: ErrHeld}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	hwm, err := d.highWater("acquire", res)
	if err != nil {
		return nil, err
	}
	now := d.clock().UTC()
	rec := Record{
		Format:          Format,
		Resource:        res,
		Purpose:         req.Purpose,
		Token:           newToken(),
		Generation:      hwm + 1,
		AcquiredAt:      now,
		RenewedAt:       now,
		ExpiresAt:       now.Add(req.TTL),
		AuthorityDigest: req.AuthorityDigest,
		Metadata:        cloneMap(req.Metadata),
		Owner:           self,
	}
	f, tmp, err := d.writeTemp("acquire", &rec)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
			f.Close()
		}
	}()

	d.step("acquire/written")
	if err := os.Link(tmp, lp); err != nil {
		if errors.Is(err, os.ErrExist) {
			holder, _, rerr := d.readFile("acquire", res, lp)
			if rerr != nil && !errors.Is(rerr, ErrNotFound) {
				return nil, rerr
			}
			return nil, &Error{Op: "acquire", Resource: res, Path: lp, Holder: holder, Err: ErrHeld}
		}
		// Another error may still have created the link (e.g. a lost
		// reply): only the inode says whether the name is ours.
		if !durable.SameFile(f, lp) {
			return nil, &Error{Op: "acquire", Resource: res, Path: lp, Err: err}
		}
	}
	d.step("acquire/linked")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, d.undoLink(res, f, &Error{Op: "acquire", Resource: res, Path: tmp, Err: err})
	}
	d.step("acquire/unlinked-temp")
	if err := d.syncDir(); err != nil {
		return nil, d.undoLink(res, f, &Error{Op: "acquire", Resource: res, Path: d.path, Err: err})
	}
	ok = true
	return &Lease{dir: d, rec: rec, f: f, pid: os.Getpid()}, nil
}

// undoLink withdraws a lease that was linked but could not be made
// durable, so the failed acquire leaves nothing behind.
func (d *Dir) undoLink(res string, f *os.File, cause error) error {
	if durable.SameFile(f, d.leasePath(res)) {
		os.Remove(d.leasePath(res))
		_ = d.syncDir()
	}
	return cause
}

// writeTemp writes rec to a new temporary file in the directory, locked
// and fsynced (durable.WriteTemp). The caller owns the returned descriptor
// and name.
func (d *Dir) writeTemp(op string, rec *Record) (*os.File, string, error) {
	data, err := encodeRecord(rec)
	if err != nil {
		return nil, "", &Error{Op: op, Resource: rec.Resource, Err: err}
	}
	f, tmp, err := durable.WriteTemp(d.path, rec.Resource, data, func() { d.step(op + "/temp-created") })
	if err != nil {
		return nil, "", &Error{Op: op, Resource: rec.Resource, Path: tmp, Err: err}
	}
	return f, tmp, nil
}

// Check verifies that the lease is still held by the calling process
// exactly: not released, same process, the lease name still links to the
// file this Lease holds, and that file carries this grant's token. Callers
// run it immediately before every effect the lease protects.
func (l *Lease) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checkLocked("verify", true)
}

// checkLocked verifies ownership. It compares first, without opening
// anything, the file the lease name links to with the witness this Lease
// holds open: a lease file is never rewritten in place, so another file
// there means the lease is not ours (ErrNotOwner), and an error reading
// the name (not its absence) is returned as it is, telling "cannot read
// the lease now" from "the lease is not mine". That comparison is
// conclusive for a caller holding the side lock; with full, the record
// is also read back and its token compared (against a rewrite in place
// by hand), which needs a descriptor.
func (l *Lease) checkLocked(op string, full bool) error {
	lp := l.dir.leasePath(l.rec.Resource)
	fail := func(reason string) error {
		return &Error{Op: op, Resource: l.rec.Resource, Path: lp, Reason: reason, Err: ErrNotOwner}
	}
	if l.released {
		return fail("the lease was already released")
	}
	if pid := os.Getpid(); pid != l.pid || pid != l.rec.Owner.PID {
		return fail(fmt.Sprintf("the lease belongs to pid %d, not this process (pid %d)", l.rec.Owner.PID, pid))
	}
	fi, err := os.Lstat(lp)
	if errors.Is(err, os.ErrNotExist) {
		return fail("the lease file is gone (released or recovered by another process)")
	}
	if err != nil {
		return &Error{Op: op, Resource: l.rec.Resource, Path: lp, Err: err}
	}
	wi, err := l.f.Stat()
	if err != nil {
		return &Error{Op: op, Resource: l.rec.Resource, Path: lp, Err: err}
	}
	if !os.SameFile(wi, fi) {
		if !full {
			return fail("the lease was lost: the lease file is not the one this owner holds")
		}
		// Read who holds it now, for the message; failing that, the
		// identity comparison alone decides.
		if disk, _, err := l.dir.readFile(op, l.rec.Resource, lp); err == nil && disk.Token != l.rec.Token {
			return &Error{Op: op, Resource: l.rec.Resource, Path: lp, Holder: disk,
				Reason: "the lease was lost: another grant holds the resource now", Err: ErrNotOwner}
		}
		return fail("the lease file was replaced")
	}
	if !full {
		return nil
	}
	disk, _, err := l.dir.readFile(op, l.rec.Resource, lp)
	if errors.Is(err, ErrNotFound) {
		return fail("the lease file is gone (released or recovered by another process)")
	}
	if err != nil {
		return err
	}
	if disk.Token != l.rec.Token {
		return &Error{Op: op, Resource: l.rec.Resource, Path: lp, Holder: disk,
			Reason: "the lease was lost: another grant holds the resource now", Err: ErrNotOwner}
	}
	return nil
}

// Renew extends the lease to expire ttl from now. Only the exact owner may
// renew; the new record replaces the old one atomically (rename), keeping
// token and generation.
func (l *Lease) Renew(ttl time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := l.rec.Resource
	if ttl <= 0 {
		return &Error{Op: "renew", Resource: res, Err: fmt.Errorf("%w: TTL %v is not positive", ErrInvalid, ttl)}
	}
	if err := l.checkLocked("renew", true); err != nil {
		return err
	}
	side, err := l.dir.sideLock(res)
	if err != nil {
		return err
	}
	defer side.Unlock()
	if err := l.checkLocked("renew", false); err != nil {
		return err
	}
	rec := l.rec
	rec.Metadata = cloneMap(l.rec.Metadata)
	rec.RenewedAt = l.dir.clock().UTC()
	if rec.RenewedAt.Before(rec.AcquiredAt) {
		rec.RenewedAt = rec.AcquiredAt
	}
	rec.ExpiresAt = rec.RenewedAt.Add(ttl)
	f, tmp, err := l.dir.writeTemp("renew", &rec)
	if err != nil {
		return err
	}
	lp := l.dir.leasePath(res)
	if err := os.Rename(tmp, lp); err != nil {
		f.Close()
		os.Remove(tmp)
		return &Error{Op: "renew", Resource: res, Path: lp, Err: err}
	}
	l.dir.step("renew/renamed")
	old := l.f
	l.f, l.rec = f, rec
	old.Close()
	if err := l.dir.syncDir(); err != nil {
		return &Error{Op: "renew", Resource: res, Path: l.dir.path, Err: err}
	}
	return nil
}

// Release gives the resource up. Only the exact owner may release; a
// second release, a release from another process, or a release of a lease
// that was lost fails with ErrNotOwner and changes nothing. The released
// record becomes the resource's generation high-water mark.
func (l *Lease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	res := l.rec.Resource
	side, err := l.dir.sideLock(res)
	if err != nil {
		return err
	}
	defer side.Unlock()
	if err := l.checkLocked("release", false); err != nil {
		return err
	}
	// While this lease holds the name, only its own release or recovery
	// changes the high-water mark, which it read as generation-1 when it
	// acquired: no need to read it again.
	if err := l.dir.retireName(res, l.rec.Generation, false); err != nil {
		return &Error{Op: "release", Resource: res, Path: l.dir.leasePath(res), Err: err}
	}
	l.dir.step("release/renamed")
	l.released = true
	if err := l.dir.syncDir(); err != nil {
		l.f.Close()
		return &Error{Op: "release", Resource: res, Path: l.dir.path, Err: err}
	}
	// Close the witness only after the name is gone and durable: until then
	// the lease is still visibly ours.
	return l.f.Close()
}

// retireName removes the lease name of res, making its record (generation
// gen) the high-water mark in one atomic rename. The caller holds the side
// lock. With checkHighWater, should the high-water mark already be higher
// (it never is when every writer follows these rules), it is kept and the
// name is unlinked.
func (d *Dir) retireName(res string, gen uint64, checkHighWater bool) error {
	if checkHighWater {
		hwm, err := d.highWater("retire", res)
		if err != nil {
			return err
		}
		if hwm >= gen {
			return os.Remove(d.leasePath(res))
		}
	}
	return os.Rename(d.leasePath(res), d.genPath(res))
}

func newToken() string {
	var b [16]byte
	if _, err := cryptoRead(b[:]); err != nil {
		panic("reservation: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

var cryptoRead = crand.Read

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
