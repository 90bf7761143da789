package durable

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/majlis-dev/majlis/wire"
	"golang.org/x/sys/unix"
)

// TempSuffix ends the name of every temporary file this package writes:
// ".<name>.<16 hex digits>" + TempSuffix, in the target's folder.
const TempSuffix = ".tmp"

var (
	// ErrExists: Publish found the name already taken.
	ErrExists = wire.Sentinel("exists", "reservation: file already published")
	// ErrInvalid: the file name cannot be written (empty, a path, or the
	// shape of a temporary file).
	ErrInvalid = wire.Sentinel("invalid_request", "durable: invalid file name")
)

// An Error reports a failed durable write: the operation (publish,
// replace), the file concerned and the cause (ErrExists, ErrInvalid or an
// OS error).
type Error struct {
	Op   string
	Path string
	Err  error
}

func (e *Error) Unwrap() error { return e.Err }

// Error renders the error as the lease package did before this package
// held the protocol, so that messages users see are unchanged.
func (e *Error) Error() string {
	msg := strings.TrimPrefix(strings.TrimPrefix(e.Err.Error(), "reservation: "), "durable: ")
	s := "reservation: " + e.Op + ": " + msg
	if e.Path != "" {
		s += "; file " + e.Path
	}
	return s
}

// Reason explains an ErrInvalid.
func (e *Error) Reason() string {
	if errors.Is(e.Err, ErrInvalid) {
		return "invalid file name"
	}
	return ""
}

// An Option adjusts a write.
type Option func(*options)

type options struct {
	perm    fs.FileMode
	created func()
}

// Perm sets the written file's permission bits (default 0600).
func Perm(perm fs.FileMode) Option { return func(o *options) { o.perm = perm } }

// Publish writes data to dir/name with the no-clobber protocol: a
// complete, fsynced temporary file is hard-linked to the name, so the name
// either does not exist or holds the complete data, and an existing name is
// never overwritten (ErrExists). The folder is fsynced before Publish
// returns. It is how immutable records (claims, events) are published.
func Publish(dir, name string, data []byte, opts ...Option) error {
	return write(dir, name, data, false, opts)
}

// Replace atomically replaces dir/name with data: temporary file, fsync,
// rename, fsync of the folder. Readers see the old or the new content,
// never a mixture. It is for mutable files that are read whole.
func Replace(dir, name string, data []byte, opts ...Option) error {
	return write(dir, name, data, true, opts)
}

// validName refuses names that are not one entry of dir, and names shaped
// like this package's temporary files (a sweeper could remove them).
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && name == filepath.Base(name) &&
		!(strings.HasPrefix(name, ".") && strings.HasSuffix(name, TempSuffix))
}

func write(dir, name string, data []byte, replace bool, opts []Option) error {
	p, err := prepare(dir, name, data, replace, opts)
	if err != nil {
		return err
	}
	return p.Commit()
}

// A Prepared is a durable write made up to its name: the temporary file
// written and fsynced (Prepare). Commit gives it its name; Discard drops
// it. Exactly one of the two must follow.
type Prepared struct {
	op, dir, name, tmp string
	replace            bool
	f                  *os.File
}

// Prepare is the first half of Publish: it writes and fsyncs data in a
// temporary file of dir, and the name dir/name does not exist yet (a
// reader of dir sees only the temporary file, named as this package names
// them). A caller can so write a record while something else that must
// come before its name (another write, a check) is done.
func Prepare(dir, name string, data []byte, opts ...Option) (*Prepared, error) {
	return prepare(dir, name, data, false, opts)
}

func prepare(dir, name string, data []byte, replace bool, opts []Option) (*Prepared, error) {
	o := options{perm: 0o600}
	for _, opt := range opts {
		opt(&o)
	}
	p := &Prepared{op: "publish", dir: dir, name: name, replace: replace}
	if replace {
		p.op = "replace"
	}
	if !validName(name) {
		return nil, &Error{Op: p.op, Path: filepath.Join(dir, name), Err: ErrInvalid}
	}
	f, tmp, err := writeTemp(dir, name, data, o)
	if err != nil {
		return nil, &Error{Op: p.op, Path: tmp, Err: err}
	}
	p.f, p.tmp = f, tmp
	return p, nil
}

// Commit gives the prepared write its name as Publish (or Replace) does:
// no-clobber (ErrExists when the name exists), and the folder fsynced
// before it returns. The temporary file is gone afterwards, whatever
// happened.
func (p *Prepared) Commit() error {
	defer p.Discard()
	target := filepath.Join(p.dir, p.name)
	var err error
	if p.replace {
		err = os.Rename(p.tmp, target)
	} else {
		err = os.Link(p.tmp, target)
		if err != nil && !errors.Is(err, os.ErrExist) && SameFile(p.f, target) {
			err = nil // the link happened despite the error
		}
	}
	if errors.Is(err, os.ErrExist) {
		return &Error{Op: p.op, Path: target, Err: ErrExists}
	}
	if err != nil {
		return &Error{Op: p.op, Path: target, Err: err}
	}
	if err := SyncDir(p.dir); err != nil {
		return &Error{Op: p.op, Path: p.dir, Err: err}
	}
	return nil
}

// Discard removes the prepared write's temporary file, unnamed. After
// Commit it does nothing.
func (p *Prepared) Discard() {
	if p.f == nil {
		return
	}
	p.f.Close()
	os.Remove(p.tmp)
	p.f = nil
}

// WriteTemp is the first half of a durable write, for callers that keep
// the file open afterwards (a lease file's owner holds its lock as the
// witness that it is alive): it creates the temporary file
// dir/.<name>.<random>.tmp, locks it (flock, exclusive), calls created (a
// seam for crash tests; may be nil), writes data and fsyncs it. The caller
// owns the returned descriptor and name: it links or renames the file to
// its name, removes the temporary name, and fsyncs the folder (SyncDir).
// On error nothing is left behind and the name returned is the temporary
// file's, for the message.
func WriteTemp(dir, name string, data []byte, created func()) (*os.File, string, error) {
	if !validName(name) {
		return nil, filepath.Join(dir, name), ErrInvalid
	}
	return writeTemp(dir, name, data, options{perm: 0o600, created: created})
}

func writeTemp(dir, name string, data []byte, o options) (*os.File, string, error) {
	tmp := filepath.Join(dir, "."+name+"."+randomHex(8)+TempSuffix)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, tmp, err
	}
	fail := func(err error) (*os.File, string, error) {
		f.Close()
		os.Remove(tmp)
		return nil, tmp, err
	}
	// Lock first: from here on a sweeper sees the file as in use.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(err)
	}
	if o.created != nil {
		o.created()
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if o.perm != 0o600 {
		if err := f.Chmod(o.perm); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return f, tmp, nil
}

// SameFile reports whether path (not followed) names the file open as f.
func SameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	if err != nil {
		return false
	}
	return os.SameFile(a, b)
}

// SyncDir fsyncs the folder dir, making its entries (names created,
// linked, renamed or removed in it) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = &fs.PathError{Op: "fsync", Path: dir, Err: err}
		}
	}
	return err
}

// MkdirAll makes dir and any missing parents with permission perm,
// fsyncing the folder that gained each new entry, so that a file written
// inside it (whose write fsyncs only dir itself) survives a power loss
// with the folders that hold it.
func MkdirAll(dir string, perm fs.FileMode) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("durable: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// ErrorCode is reservation_failed (durable writes were the lease
// package's), when the error wraps no sentinel of its own.
func (e *Error) ErrorCode() string { return "reservation_failed" }

// ErrorDetails are the error's facts, as they were when the lease package
// wrote records: op, path and reason.
func (e *Error) ErrorDetails() map[string]any {
	d := map[string]any{"op": e.Op, "path": e.Path}
	if r := e.Reason(); r != "" {
		d["reason"] = r
	}
	return d
}
