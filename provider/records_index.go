package provider

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/majlis-dev/majlis/internal/failpoint"
	"golang.org/x/sys/unix"
)

// The claims index, <state>/claims.index, lets the commands that read every
// binding's claims (list, allocate, the reclaim preview and its peer check)
// read one file instead of a folder and two or three sealed records per
// binding. It is derived state, never a source of truth:
//
//   - It holds, for each binding folder, the records read from it, each
//     beside the file identity (device, inode, size, change and
//     modification times) the folder and every file had when they were
//     read. A binding is taken from the index only when its folder and
//     every file in it still have those identities: publishing, removing
//     or rewriting any record changes its folder's or its own change time,
//     which nobody can set back. Anything else (a binding the index does
//     not hold, one whose files changed, an index that is missing, torn,
//     corrupt or of another format) is read from the records themselves.
//   - A binding is written into the index only when its folder and files
//     were last changed before the index began to be built (the change
//     time of the index's temporary file), since a change in the same
//     tick of the file system's clock would leave the times as they were
//     (git's "racily clean" entries).
//   - Every reader that reads a binding from its records writes a new
//     index, whole, to a temporary file it then renames over the old one:
//     concurrent writers each leave a complete index, and a crash leaves
//     the old one. No fsync: a torn index is only a slower read.
//
// So the index can always be rebuilt from the claims (deleting it is
// harmless), and what it returns is what reading the records would have
// returned at that moment.
const claimsIndexName = "claims.index"

// claimsIndexMagic starts the index: its format and version.
const claimsIndexMagic = "majlis-claims-index-4\n"

var errIndexUnusable = errors.New("claims index unusable")

// A statKey is what a file's identity and times were when it was read.
type statKey struct {
	Dev, Ino, Size uint64
	Ctime, Mtime   int64 // nanoseconds since the epoch
}

// An indexFile is one record of a binding folder.
type indexFile struct {
	Name   string
	Key    statKey
	Digest string // the record's digest
	Claim  *Claim // for a claim; else Event
	Event  *Event
}

// An indexBinding is one binding folder.
type indexBinding struct {
	Binding string
	Dir     statKey
	Files   []indexFile
	raw     []byte // its encoding, when decoded from an index: written again as it was
}

func (br *bindingRecords) indexPath() string { return filepath.Join(br.state, claimsIndexName) }

// Index reads the index, or nil when there is none that can be
// used.
func (br *bindingRecords) Index() map[string]*indexBinding {
	data, err := os.ReadFile(br.indexPath())
	if err != nil {
		return nil
	}
	bs, err := decodeClaimsIndex(data)
	if err != nil {
		return nil
	}
	out := make(map[string]*indexBinding, len(bs))
	for _, b := range bs {
		out[b.Binding] = b
	}
	return out
}

// Prefetch starts reading the claims index on another goroutine and
// returns what waits for it. The index may be read before the records
// are: what it holds is taken only for the bindings whose folder and
// records are, when they are read, as it saw them (records), so reading
// it early changes no answer. An allocation reads it while it checks
// git's worktrees, before the publication lease.
func (br *bindingRecords) Prefetch() func() map[string]*indexBinding {
	ch := make(chan map[string]*indexBinding, 1)
	go func() { ch <- br.Index() }()
	return sync.OnceValue(func() map[string]*indexBinding { return <-ch })
}

// records returns the binding's records as readBindingRecords would,
// when the folder and every file are as the index saw them (keys reads
// them under the claims folder); ok is false otherwise.
func (b *indexBinding) records(keys *keyReader) (recs []*claimRecord, ok bool) {
	if k, err := keys.key(b.Binding); err != nil || k != b.Dir {
		return nil, false
	}
	for _, f := range b.Files {
		if k, err := keys.key(b.Binding + string(filepath.Separator) + f.Name); err != nil || k != f.Key {
			return nil, false
		}
		if f.Claim != nil {
			recs = append(recs, &claimRecord{Claim: *f.Claim, Digest: f.Digest, Events: make(map[string]*Event, 2)})
		}
	}
	if len(recs) > 1 {
		slices.SortFunc(recs, func(a, b *claimRecord) int { return cmp.Compare(a.Claim.Seq, b.Claim.Seq) })
	}
	for _, f := range b.Files {
		if f.Event != nil {
			ev := *f.Event
			i, found := slices.BinarySearchFunc(recs, ev.Seq, func(r *claimRecord, seq int) int { return cmp.Compare(r.Claim.Seq, seq) })
			if !found {
				return nil, false // decodeClaimsIndex checked that the claim is there
			}
			recs[i].Events[ev.Kind] = &ev
		}
	}
	return recs, true
}

// writeClaimsIndex writes bs as the new index through tmp (open, made
// before any of them was read) and renames it into place. racy is the
// time the index began: bindings changed at or after it are left out.
func (br *bindingRecords) writeClaimsIndex(tmp *os.File, racy int64, bs []*indexBinding) error {
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	var keep []*indexBinding
	for _, b := range bs {
		if b != nil && !b.racy(racy) {
			keep = append(keep, b)
		}
	}
	_, err := tmp.Write(encodeClaimsIndex(keep))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := fpIndexWrite.Inject(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), br.indexPath()); err != nil {
		return err
	}
	br.removeStaleIndexes()
	return nil
}

// discardClaimsIndex removes a temporary index that was begun and is not
// to be written.
func discardClaimsIndex(tmp *os.File) {
	tmp.Close()
	os.Remove(tmp.Name())
}

// staleIndexAge is how old a temporary index must be before a writer
// takes it for a crashed writer's and removes it: writers keep theirs for
// the length of one read of the claims.
const staleIndexAge = 10 * time.Minute

// removeStaleIndexes removes temporary indexes that crashed writers left.
func (br *bindingRecords) removeStaleIndexes() {
	names, _ := filepath.Glob(filepath.Join(br.state, ".claims.index-*.tmp"))
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleIndexAge {
			os.Remove(n)
		}
	}
}

func (b *indexBinding) racy(t int64) bool {
	if b.Dir.Ctime >= t || b.Dir.Mtime >= t {
		return true
	}
	for _, f := range b.Files {
		if f.Key.Ctime >= t || f.Key.Mtime >= t {
			return true
		}
	}
	return false
}

// startClaimsIndex creates the temporary file a new index is written to,
// and returns it with its change time: the file system's clock now. nil
// when the state folder cannot be written (the index is then only read).
func (br *bindingRecords) startClaimsIndex() (*os.File, int64) {
	f, err := os.CreateTemp(br.state, ".claims.index-*.tmp")
	if err != nil {
		return nil, 0
	}
	// Locked while it is written, as every temporary file of the state
	// folder is (internal/durable): doctor tells a live writer's file from
	// one a crash left by its lock.
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if err == nil {
		err = f.Chmod(0o644) // readable as the journal and the records are
	}
	if err == nil {
		if k, ok := keyOf(fi); ok {
			return f, min(k.Ctime, k.Mtime)
		}
	}
	f.Close()
	os.Remove(f.Name())
	return nil, 0
}

func lstatKey(path string) (statKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return statKey{}, err
	}
	k, ok := keyOf(fi)
	if !ok {
		return statKey{}, errIndexUnusable
	}
	return k, nil
}

var indexCRC = crc32.MakeTable(crc32.Castagnoli)

// encodeClaimsIndex renders the index: the magic line, the bindings, and
// a CRC-32C of everything before it.
func encodeClaimsIndex(bs []*indexBinding) []byte {
	size := len(claimsIndexMagic) + 16
	for _, b := range bs {
		size += len(b.raw) + 1024
	}
	w := ixWriter{b: make([]byte, 0, size)}
	w.b = append(w.b, claimsIndexMagic...)
	w.uvarint(uint64(len(bs)))
	for _, b := range bs {
		if b.raw != nil {
			w.b = append(w.b, b.raw...)
			continue
		}
		w.str(b.Binding)
		w.key(b.Dir)
		w.uvarint(uint64(len(b.Files)))
		for _, f := range b.Files {
			w.str(f.Name)
			w.key(f.Key)
			w.str(f.Digest)
			if f.Claim != nil {
				w.b = append(w.b, 'c')
				w.claim(f.Claim)
			} else {
				w.b = append(w.b, 'e')
				w.event(f.Event)
			}
		}
	}
	return binary.BigEndian.AppendUint32(w.b, crc32.Checksum(w.b, indexCRC))
}

// decodeClaimsIndex parses an index. It must be complete, checksummed,
// and every record in it valid and consistent with its file's name, as
// readBindingRecords requires of the records themselves; anything else is
// errIndexUnusable.
func decodeClaimsIndex(data []byte) ([]*indexBinding, error) {
	if len(data) < len(claimsIndexMagic)+4 || string(data[:len(claimsIndexMagic)]) != claimsIndexMagic {
		return nil, fmt.Errorf("%w: unknown format", errIndexUnusable)
	}
	body := data[:len(data)-4]
	if binary.BigEndian.Uint32(data[len(data)-4:]) != crc32.Checksum(body, indexCRC) {
		return nil, fmt.Errorf("%w: checksum mismatch", errIndexUnusable)
	}
	rest := body[len(claimsIndexMagic):]
	r := ixReader{b: rest, all: string(rest)}
	n := r.count()
	var out []*indexBinding
	seen := map[string]bool{}
	for range n {
		start := r.b
		b := &indexBinding{Binding: r.str(), Dir: r.key()}
		nf := r.count()
		b.Files = make([]indexFile, 0, min(nf, 16)) // nf is only bounded by the bytes left
		for range nf {
			f := indexFile{Name: r.str(), Key: r.key(), Digest: r.str()}
			switch r.byte() {
			case 'c':
				f.Claim = r.claim()
			case 'e':
				f.Event = r.event()
			default:
				r.fail()
			}
			b.Files = append(b.Files, f)
		}
		if r.err != nil {
			break
		}
		b.raw = start[:len(start)-len(r.b)]
		if seen[b.Binding] {
			return nil, fmt.Errorf("%w: binding %s twice", errIndexUnusable, b.Binding)
		}
		seen[b.Binding] = true
		if err := b.check(); err != nil {
			return nil, fmt.Errorf("%w: binding %s: %v", errIndexUnusable, b.Binding, err)
		}
		out = append(out, b)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: malformed", errIndexUnusable)
	}
	return out, nil
}

// check holds an indexed binding to what readBindingRecords accepts.
func (b *indexBinding) check() error {
	if ValidBinding(b.Binding) != nil {
		return errors.New("bad binding")
	}
	// Most bindings have a few records: their names and claims are then
	// looked up by going through them, a thousand maps fewer to make.
	few := len(b.Files) <= 16
	var names map[string]bool
	var claims map[int]string
	if !few {
		names, claims = make(map[string]bool, len(b.Files)), map[int]string{}
		for _, f := range b.Files {
			if f.Claim != nil {
				claims[f.Claim.Seq] = f.Digest
			}
		}
	}
	digestOf := func(seq int) string {
		if !few {
			return claims[seq]
		}
		for _, f := range b.Files {
			if f.Claim != nil && f.Claim.Seq == seq {
				return f.Digest
			}
		}
		return ""
	}
	seen := func(i int) bool {
		if !few {
			defer func() { names[b.Files[i].Name] = true }()
			return names[b.Files[i].Name]
		}
		for _, g := range b.Files[:i] {
			if g.Name == b.Files[i].Name {
				return true
			}
		}
		return false
	}
	for i, f := range b.Files {
		if seen(i) || strings.ContainsRune(f.Name, filepath.Separator) {
			return errors.New("bad file name")
		}
		if f.Claim == nil {
			continue
		}
		c := f.Claim
		if err := c.check(); err != nil {
			return err
		}
		if c.Format != claimFormatOf(c) || c.Binding != b.Binding || !isClaimName(f.Name, c.Seq, "claim") || !strings.HasPrefix(f.Digest, "sha256:") {
			return errors.New("claim does not match its file")
		}
	}
	for _, f := range b.Files {
		if f.Claim != nil {
			continue
		}
		e := f.Event
		if err := e.check(); err != nil {
			return err
		}
		if e.Format != formatEvent || e.Binding != b.Binding || !isClaimName(f.Name, e.Seq, e.Kind) || digestOf(e.Seq) == "" || digestOf(e.Seq) != e.ClaimDigest {
			return errors.New("event does not match its claim")
		}
	}
	return nil
}

var fpIndexWrite = failpoint.New("claims-index/write")
