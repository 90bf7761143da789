package reservation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/majlis-dev/majlis/internal/durable"
	"github.com/majlis-dev/majlis/internal/procid"
	"golang.org/x/sys/unix"
)

// File names inside a lease directory, for a resource R:
//
//	R.lease                     the current lease, if any
//	R.gen                       the last released or retired record: its generation is the high-water mark
//	R.lock                      side lock serialising acquire, renew, release and recover of R
//	.R.<random>.tmp             a record being written (removed when done; stray ones are swept)
//	retired/R.<gen>.<token>.lease  leases retired by recovery
const (
	leaseSuffix = ".lease"
	genSuffix   = ".gen"
	lockSuffix  = ".lock"
	tmpSuffix   = durable.TempSuffix
	retiredDir  = "retired"
)

// staleTempAge is how old an unlocked temporary file must be before a sweep
// removes it: long enough that an acquirer between creating its temporary
// file and locking it is never disturbed. Removing one early would only make
// that acquire fail, never grant a lease twice.
const staleTempAge = 30 * time.Second

// A Dir is a directory of lease files. It must be on a local filesystem.
// A Dir is safe for concurrent use by multiple goroutines; mutual exclusion
// between processes comes from the files themselves.
type Dir struct {
	path string
	df   *os.File // the directory, kept open for fsync

	// Seams for tests in this package; nil in production.
	now  func() time.Time
	hook func(step string)
	self func() (procid.Owner, error)
}

// Open opens (creating it if needed, mode 0700) the lease directory at
// path. It refuses a directory on a network or FUSE filesystem, and sweeps
// temporary files that crashed acquirers left behind.
func Open(path string) (*Dir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{Op: "open", Path: path, Err: err}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, &Error{Op: "open", Path: abs, Err: err}
	}
	if err := checkLocalFS(abs); err != nil {
		return nil, &Error{Op: "open", Path: abs, Reason: err.Error(), Err: ErrUnsupportedFS}
	}
	df, err := os.Open(abs)
	if err != nil {
		return nil, &Error{Op: "open", Path: abs, Err: err}
	}
	d := &Dir{path: abs, df: df}
	_, _ = d.Sweep()
	return d, nil
}

// Path returns the directory's absolute path.
func (d *Dir) Path() string { return d.path }

// Close releases the directory handle. Leases acquired through d stay
// held; they keep their own descriptors.
func (d *Dir) Close() error { return d.df.Close() }

func (d *Dir) leasePath(res string) string { return filepath.Join(d.path, res+leaseSuffix) }
func (d *Dir) genPath(res string) string   { return filepath.Join(d.path, res+genSuffix) }
func (d *Dir) lockPath(res string) string  { return filepath.Join(d.path, res+lockSuffix) }

func (d *Dir) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

func (d *Dir) step(name string) {
	if d.hook != nil {
		d.hook(name)
	}
}

// owner returns this process's identity.
func (d *Dir) owner() (procid.Owner, error) {
	if d.self != nil {
		return d.self()
	}
	o, err := procid.Self()
	if err != nil {
		return procid.Owner{}, fmt.Errorf("%w: %v", ErrIdentity, err)
	}
	return o, nil
}

// syncDir makes the directory's entries durable.
func (d *Dir) syncDir() error { return d.df.Sync() }

// sideLock takes the per-resource side lock that serialises the
// operations that read or change which file holds the lease name and the
// high-water mark. It is held for microseconds to a few milliseconds and
// never across anything but this package's own file operations; the kernel
// drops it if the holder dies.
func (d *Dir) sideLock(res string) (*flock.Flock, error) {
	fl := flock.New(d.lockPath(res), flock.SetFlag(os.O_CREATE|os.O_RDWR))
	if err := fl.Lock(); err != nil {
		return nil, &Error{Op: "lock", Resource: res, Path: d.lockPath(res), Err: err}
	}
	return fl, nil
}

// trySideLock is sideLock without waiting: errSideBusy when it is taken.
func (d *Dir) trySideLock(res string) (*flock.Flock, error) {
	fl := flock.New(d.lockPath(res), flock.SetFlag(os.O_CREATE|os.O_RDWR))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, &Error{Op: "lock", Resource: res, Path: d.lockPath(res), Err: err}
	}
	if !ok {
		return nil, errSideBusy
	}
	return fl, nil
}

// readFile reads and validates a record file. It returns ErrNotFound (bare)
// when the file does not exist, and a malformed *Error otherwise.
func (d *Dir) readFile(op, res, path string) (*Record, os.FileInfo, error) {
	f, err := openRecord(op, res, path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, ErrNotFound
		}
		return nil, nil, err
	}
	defer f.Close()
	return d.readOpen(op, res, path, f)
}

// openRecord opens the record file path to read it, without following a
// symbolic link and without waiting: a FIFO or a device at a lease name
// would make a plain open block until someone writes to it. Neither is
// something majlis writes, so both, and a symbolic link, are malformed
// (readOpen refuses whatever is not a regular file). A missing file gives
// an error satisfying errors.Is(err, os.ErrNotExist); others are *Error.
func openRecord(op, res, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		return f, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, err
	case errors.Is(err, unix.ELOOP):
		return nil, &Error{Op: op, Resource: res, Path: path, Reason: "a symbolic link, not a regular file", Err: ErrMalformed}
	default:
		return nil, &Error{Op: op, Resource: res, Path: path, Err: err}
	}
}

func (d *Dir) readOpen(op, res, path string, f *os.File) (*Record, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, &Error{Op: op, Resource: res, Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &Error{Op: op, Resource: res, Path: path, Reason: "not a regular file", Err: ErrMalformed}
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, nil, &Error{Op: op, Resource: res, Path: path, Err: err}
	}
	rec, err := decodeRecord(data)
	if err != nil {
		return nil, nil, &Error{Op: op, Resource: res, Path: path, Reason: err.Error(), Err: ErrMalformed}
	}
	if rec.Resource != res {
		return nil, nil, &Error{Op: op, Resource: res, Path: path,
			Reason: fmt.Sprintf("record names resource %q, not %q", rec.Resource, res), Err: ErrMalformed}
	}
	return rec, fi, nil
}

// highWater returns the generation high-water mark of res: the generation
// of its last released or retired grant, or 0 if it was never granted.
func (d *Dir) highWater(op, res string) (uint64, error) {
	rec, _, err := d.readFile(op, res, d.genPath(res))
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return rec.Generation, nil
}

// Inspect reads and validates the current lease of res. It returns an
// error wrapping ErrNotFound when no lease exists, and one wrapping
// ErrMalformed when the file cannot be trusted.
func (d *Dir) Inspect(res string) (*Record, error) {
	if err := checkResource(res); err != nil {
		return nil, &Error{Op: "inspect", Resource: res, Err: err}
	}
	rec, _, err := d.readFile("inspect", res, d.leasePath(res))
	if errors.Is(err, ErrNotFound) {
		return nil, &Error{Op: "inspect", Resource: res, Path: d.leasePath(res), Err: ErrNotFound}
	}
	return rec, err
}

// List returns the resource names that currently have a lease file whose
// name begins with prefix, sorted. It does not read the files: use Inspect.
func (d *Dir) List(prefix string) ([]string, error) {
	names, err := d.readNames()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, leaseSuffix) {
			continue
		}
		res := strings.TrimSuffix(n, leaseSuffix)
		if strings.HasPrefix(res, prefix) {
			out = append(out, res)
		}
	}
	return out, nil
}

func (d *Dir) readNames() ([]string, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, &Error{Op: "list", Path: d.path, Err: err}
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &Error{Op: "list", Path: d.path, Err: err}
	}
	slices.Sort(names)
	return names, nil
}

// Sweep removes temporary files left by crashed acquirers and renewers: a
// temporary file is removed only when it is older than a grace period and
// its writer's lock is free (the writer is gone). It returns how many it
// removed.
func (d *Dir) Sweep() (int, error) {
	names, err := d.readNames()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, name := range names {
		if !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		if d.sweepOne(filepath.Join(d.path, name)) {
			n++
		}
	}
	return n, nil
}

func (d *Dir) sweepOne(path string) bool {
	f, err := openRecord("sweep", "", path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || d.clock().Sub(fi.ModTime()) < staleTempAge {
		return false
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its writer is alive (or the file is also a held lease)
	}
	// The name is random and never reused, so removing it cannot hit
	// anything but this abandoned file. A lease name linked to the same
	// inode keeps the data.
	return os.Remove(path) == nil
}

func checkResource(res string) error {
	if !validResource(res) {
		return fmt.Errorf("%w: invalid resource name %q: use letters, digits and ._:@+=- (not first), at most 200 characters", ErrInvalid, res)
	}
	return nil
}
