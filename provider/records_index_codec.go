package provider

import (
	"encoding/binary"
	"time"
)

// The claims index's binary encoding of claims and events: every field in
// declaration order, strings and byte strings length-prefixed, integers as
// varints, times in time.Time's binary form. TestClaimsIndexCodecComplete
// fails when a field is added to Claim or Event and not here.

type ixWriter struct{ b []byte }

func (w *ixWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *ixWriter) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *ixWriter) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }

func (w *ixWriter) boolean(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *ixWriter) time(t time.Time) {
	data, err := t.MarshalBinary()
	if err != nil { // a zone offset time cannot encode: never valid in a record
		data = nil
	}
	w.str(string(data))
}

func (w *ixWriter) key(k statKey) {
	w.uvarint(k.Dev)
	w.uvarint(k.Ino)
	w.uvarint(k.Size)
	w.varint(k.Ctime)
	w.varint(k.Mtime)
}

func (w *ixWriter) claim(c *Claim) {
	w.str(c.Format)
	w.str(c.Binding)
	w.varint(int64(c.Seq))
	w.str(c.RequestID)
	w.str(c.Path)
	w.str(c.PhysicalPath)
	w.str(c.CommonDir)
	w.str(c.RepositoryID)
	w.str(c.Base)
	w.str(c.BaseRef)
	w.str(c.Branch)
	w.boolean(c.Checkout)
	w.boolean(c.Detached)
	w.str(c.Restore)
	w.str(c.FromTrash)
	w.str(c.DetachedFrom)
	w.str(c.Kind)
	if c.Intent == nil {
		w.uvarint(0)
	} else {
		w.uvarint(uint64(len(c.Intent)) + 1)
		for _, s := range c.Intent {
			w.str(s)
		}
	}
	w.varint(int64(c.OwnerPID))
	w.uvarint(c.OwnerStart)
	w.boolean(c.AllowNested)
	a := &c.Allocator
	w.str(a.Hostname)
	w.str(a.MachineID)
	w.str(a.BootID)
	w.str(a.PIDNamespace)
	w.varint(int64(a.PID))
	w.uvarint(a.StartTime)
	w.time(c.CreatedAt)
}

func (w *ixWriter) event(e *Event) {
	w.str(e.Format)
	w.str(e.Kind)
	w.str(e.Binding)
	w.varint(int64(e.Seq))
	w.str(e.ClaimDigest)
	w.time(e.At)
	w.uvarint(e.Dev)
	w.uvarint(e.Ino)
	w.str(e.Head)
	w.str(e.Reason)
	w.str(e.SalvageRef)
	w.str(e.TrashPath)
	w.str(e.AdminEntry)
	w.boolean(e.KeepUntil != nil)
	if e.KeepUntil != nil {
		w.time(*e.KeepUntil)
	}
	w.str(e.Branch)
	w.str(e.AdminKept)
	w.str(e.RequestID)
	w.str(e.Taker)
}

// An ixReader decodes what ixWriter wrote. The first error sticks: every
// later read returns zero values, and err says the data was malformed.
type ixReader struct {
	b   []byte
	err error
	// all, when set, holds the bytes b started as, as one string: str
	// returns slices of it instead of a copy each (a thousand bindings
	// hold tens of thousands of strings).
	all string
}

func (r *ixReader) fail() {
	if r.err == nil {
		r.err = errIndexUnusable
	}
	r.b = nil
}

func (r *ixReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *ixReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a number of items to follow, each taking at least a byte.
func (r *ixReader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *ixReader) int() int {
	v := r.varint()
	if int64(int(v)) != v {
		r.fail()
		return 0
	}
	return int(v)
}

func (r *ixReader) str() string {
	b := r.raw()
	if r.all == "" || len(b) == 0 {
		return string(b)
	}
	end := len(r.all) - len(r.b) // raw has moved past b
	return r.all[end-len(b) : end]
}

// raw returns the next length-prefixed bytes, valid until b is reused.
func (r *ixReader) raw() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *ixReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *ixReader) boolean() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail()
	return false
}

func (r *ixReader) time() time.Time {
	var t time.Time
	if err := t.UnmarshalBinary(r.raw()); err != nil {
		r.fail()
	}
	return t
}

func (r *ixReader) key() statKey {
	return statKey{Dev: r.uvarint(), Ino: r.uvarint(), Size: r.uvarint(), Ctime: r.varint(), Mtime: r.varint()}
}

func (r *ixReader) claim() *Claim {
	c := &Claim{}
	c.Format = r.str()
	c.Binding = r.str()
	c.Seq = r.int()
	c.RequestID = r.str()
	c.Path = r.str()
	c.PhysicalPath = r.str()
	c.CommonDir = r.str()
	c.RepositoryID = r.str()
	c.Base = r.str()
	c.BaseRef = r.str()
	c.Branch = r.str()
	c.Checkout = r.boolean()
	c.Detached = r.boolean()
	c.Restore = r.str()
	c.FromTrash = r.str()
	c.DetachedFrom = r.str()
	c.Kind = r.str()
	if n := r.count(); n > 0 {
		c.Intent = make([]string, 0, n-1)
		for range n - 1 {
			c.Intent = append(c.Intent, r.str())
		}
	}
	c.OwnerPID = r.int()
	c.OwnerStart = r.uvarint()
	c.AllowNested = r.boolean()
	a := &c.Allocator
	a.Hostname = r.str()
	a.MachineID = r.str()
	a.BootID = r.str()
	a.PIDNamespace = r.str()
	a.PID = r.int()
	a.StartTime = r.uvarint()
	c.CreatedAt = r.time()
	return c
}

func (r *ixReader) event() *Event {
	e := &Event{}
	e.Format = r.str()
	e.Kind = r.str()
	e.Binding = r.str()
	e.Seq = r.int()
	e.ClaimDigest = r.str()
	e.At = r.time()
	e.Dev = r.uvarint()
	e.Ino = r.uvarint()
	e.Head = r.str()
	e.Reason = r.str()
	e.SalvageRef = r.str()
	e.TrashPath = r.str()
	e.AdminEntry = r.str()
	if r.boolean() {
		t := r.time()
		e.KeepUntil = &t
	}
	e.Branch = r.str()
	e.AdminKept = r.str()
	e.RequestID = r.str()
	e.Taker = r.str()
	return e
}
